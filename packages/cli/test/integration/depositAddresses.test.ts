// The built `payments` executable on product §30, against a live service on a local chain: `deposit-addresses` create, list, get, deactivate, activate and `deposits` list, get.
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CONFIRMATIONS,
  type LiveFixture,
  mineAndScan,
  payer,
  startLiveFixture,
  usdt,
} from "../../../../test/support/live.ts";
import { createMerchant } from "../../../../test/support/server.ts";

const BIN = fileURLToPath(new URL("../../bin/payments.js", import.meta.url));

let live: LiveFixture;
beforeAll(async () => {
  live = await startLiveFixture();
}, 60_000);
afterAll(async () => {
  await live?.server.close();
  await live?.chain.close();
});

function run(args: string[], extra: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const env = { PATH: process.env.PATH ?? "", PAYMENTS_BASE_URL: live.server.baseUrl, ...extra };
    execFile(BIN, args, { env, timeout: 20_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : -1, stdout, stderr });
    });
  });
}

async function json<T = any>(args: string[], extra: Record<string, string>): Promise<T> {
  const result = await run([...args, "--json"], extra);
  if (result.code !== 0)
    throw new Error(`payments ${args.join(" ")}: ${result.code}\n${result.stdout}${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

// Each command is a process of its own (a second or more on a loaded machine): the default 30 s is too tight.
describe("payments CLI, deposit addresses and deposits", { timeout: 180_000 }, () => {
  it("creates (the same address again), lists by customer, reads, deactivates and activates addresses", async () => {
    const m = await createMerchant(live.server);
    const key = { PAYMENTS_API_KEY: m.apiKey };
    const create = ["deposit-addresses", "create", "--customer", "cust-1", "--currency", "USDT"];
    const made = await json(create, key);
    expect(made).toMatchObject({ customer: "cust-1", currency: "USDT", networks: ["ethereum"], active: true });
    expect(await json(create, key)).toEqual(made);
    const other = await json(["deposit-addresses", "create", "--customer", "cust-2", "--currency", "USDT"], key);
    const listed = await json<{ id: string }[]>(["deposit-addresses", "list", "--customer", "cust-1"], key);
    expect(listed.map((a) => a.id)).toEqual([made.id]);
    expect((await json<{ id: string }[]>(["deposit-addresses", "list"], key)).map((a) => a.id)).toEqual([
      other.id,
      made.id,
    ]);
    expect(await json(["deposit-addresses", "get", made.id], key)).toEqual(made);
    expect((await json(["deposit-addresses", "deactivate", made.id], key)).active).toBe(false);
    expect((await json(["deposit-addresses", "activate", made.id], key)).active).toBe(true);
    const table = await run(["deposit-addresses", "list"], key);
    expect(table.code).toBe(0);
    expect(table.stdout).toContain(made.address);
    const missing = await run(["deposit-addresses", "get", "no-such-address"], key);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain("deposit_address_not_found");
    const usage = await run(["deposit-addresses", "create", "--customer", "cust-3"], key);
    expect(usage.code).toBe(2);
  });

  it("lists deposits by address and status, and reads one", async () => {
    const m = await createMerchant(live.server);
    const key = { PAYMENTS_API_KEY: m.apiKey };
    const made = await json(["deposit-addresses", "create", "--customer", "cust-7", "--currency", "USDT"], key);
    const hash = await live.token.transfer(payer(live.chain, 1), made.address, usdt("15"));
    await mineAndScan(live.server, live.chain, CONFIRMATIONS + 1);
    const deposits = await json<Record<string, any>[]>(["deposits", "list", "--address", made.id], key);
    expect(deposits.map((d) => [d.txHash, d.amount, d.status])).toEqual([[hash, "15", "completed"]]);
    expect(await json(["deposits", "list", "--status", "held"], key)).toEqual([]);
    expect(await json(["deposits", "get", deposits[0]?.id], key)).toEqual(deposits[0]);
    const table = await run(["deposits", "list", "--network", "ethereum"], key);
    expect(table.stdout).toContain("completed");
  });
});
