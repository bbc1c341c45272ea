// The built `payments` executable on the API extensions: lists, reads, events, the default callback URL, and `listen --forward-to`.
import { execFile, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { putNetwork } from "../../../../src/store/networks.ts";
import { nowIso } from "../../../../src/store/store.ts";
import { type Receiver, startReceiver, waitFor } from "../../../../test/support/callbacks.ts";
import { createInvoice, pay } from "../../../../test/support/invoices.ts";
import { admin, merchant, startTestServer, type TestServer } from "../../../../test/support/server.ts";
import { fundedMerchant, withdraw } from "../../../../test/support/withdrawals.ts";

const BIN = fileURLToPath(new URL("../../bin/payments.js", import.meta.url));

let server: TestServer;
let receiver: Receiver;
beforeAll(async () => {
  server = await startTestServer();
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
  await server.close();
});

function env(extra: Record<string, string>): Record<string, string> {
  return { PATH: process.env.PATH ?? "", PAYMENTS_BASE_URL: server.baseUrl, ...extra };
}

function run(args: string[], extra: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(BIN, args, { env: env(extra), timeout: 20_000 }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === "number" ? error.code : -1;
      resolve({ code, stdout, stderr: code === -1 ? `${stderr}${error?.message}` : stderr });
    });
  });
}

async function json<T = any>(args: string[], extra: Record<string, string>): Promise<T> {
  const result = await run([...args, "--json"], extra);
  if (result.code !== 0)
    throw new Error(`payments ${args.join(" ")}: ${result.code}\n${result.stdout}${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

// Each step starts a Node process: on a loaded machine a test of many steps takes longer than the default 30 s.
describe("payments CLI, API extensions", { timeout: 180_000 }, () => {
  it("lists invoices, withdrawals and events across pages, and reads withdrawals", async () => {
    const m = await fundedMerchant(server, "500");
    const key = { PAYMENTS_API_KEY: m.apiKey };
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push((await createInvoice(server, m.apiKey, { currency: "USDT", amount: 10 + i })).id);
    const listed = await json<{ id: string }[]>(["invoices", "list", "--limit", "4"], key);
    const expected = (await merchant(server, m.apiKey, "GET", "/public/v1/invoices?limit=4")).body.data;
    expect(listed.map((i) => i.id)).toEqual(expected.map((i: { id: string }) => i.id));
    const everything = await json<{ id: string }[]>(["invoices", "list", "--limit", "500"], key);
    expect(new Set(everything.map((i) => i.id))).toEqual(new Set(ids));
    const table = await run(["invoices", "list", "--status", "pending"], key);
    expect(table.code).toBe(0);
    expect(table.stdout.split("\n")[0]).toMatch(/^ID\s+STATUS/);

    const made = await withdraw(server, m, { amount: "12" });
    const read = await json(["withdrawals", "get", made.requestId], key);
    expect(read).toEqual(made.answer.body);
    expect((await json<{ id: string }[]>(["withdrawals", "list"], key)).map((w) => w.id)).toEqual([made.requestId]);
    expect(await json(["refunds", "list"], key)).toEqual([]);

    await pay(server, m.apiKey, ids[0]!);
    const events = await json<{ type: string }[]>(["events", "list", "--type", "invoice.completed"], key);
    expect(events.map((e) => e.type)).toEqual(["invoice.completed"]);

    const refused = await run(["invoices", "list", "--starting-after", "not-mine"], key);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("400 starting_after_not_found");
    const badType = await run(["events", "list", "--status", "completed"], key);
    expect(badType.code).toBe(2);
  });

  it("shows, sets and clears the default callback URL", async () => {
    const m = await fundedMerchant(server, "0");
    const operator = { PAYMENTS_ADMIN_TOKEN: server.adminToken };
    expect(await json(["merchants", "default-callback-url", m.id], operator)).toEqual({ callbackUrl: null });
    expect(await json(["merchants", "default-callback-url", m.id, "--url", receiver.url], operator)).toEqual({
      callbackUrl: receiver.url,
    });
    expect(await json(["merchants", "default-callback-url", m.id, "--clear"], operator)).toEqual({ callbackUrl: null });
    const invalid = await run(["merchants", "default-callback-url", m.id, "--url", "ftp://x.example/"], operator);
    expect(invalid.code).toBe(1);
  });

  it("shows, sets and clears a network's velocity cap", async () => {
    const operator = { PAYMENTS_ADMIN_TOKEN: server.adminToken };
    await server.ctx.store.transaction(async (tx) => {
      const put = await putNetwork(
        tx,
        server.ctx.box,
        "capped",
        { chainId: 1, rpcUrl: "http://127.0.0.1:9" },
        nowIso(),
      );
      expect(put.ok).toBe(true);
    });
    const shown = { network: "capped", usdPer24Hours: null, spentUsdLast24Hours: "0", waitingPayouts: 0 };
    expect(await json(["networks", "velocity-cap", "capped"], operator)).toEqual(shown);
    expect(await json(["networks", "velocity-cap", "capped", "--usd", "25000.5"], operator)).toEqual({
      ...shown,
      usdPer24Hours: "25000.5",
    });
    expect(await json(["networks", "velocity-cap", "capped", "--clear"], operator)).toEqual(shown);
    const invalid = await run(["networks", "velocity-cap", "capped", "--usd", "1.001"], operator);
    expect([invalid.code, invalid.stderr]).toEqual([1, expect.stringContaining("invalid_velocity_cap")]);
    expect((await run(["networks", "velocity-cap", "nowhere"], operator)).stderr).toContain("network_not_found");
  });

  it("listen --forward-to forwards each new event, signed with the callback secret, and only new ones", async () => {
    const m = await fundedMerchant(server, "500");
    const secret = (await admin(server, "GET", `/merchants/${m.id}/callback-secret`)).body.callbackSecret as string;
    // History before listening is not forwarded.
    const old = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 10 });
    await pay(server, m.apiKey, old.id);

    const child = spawn(BIN, ["listen", "--forward-to", receiver.url, "--interval-ms", "100"], {
      env: env({ PAYMENTS_API_KEY: m.apiKey, PAYMENTS_CALLBACK_SECRET: secret }),
    });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    try {
      await waitFor(() => stderr.includes("Ready."), 60_000);
      const before = receiver.received.length;
      const fresh = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 11 });
      await pay(server, m.apiKey, fresh.id);
      const made = await withdraw(server, m, { amount: "10" });
      await merchant(server, m.apiKey, "POST", `/sandbox/v1/payouts/${made.requestId}/outcome`, {
        status: "completed",
      });
      await waitFor(() => receiver.received.length >= before + 2, 60_000);
      // A few more polls: nothing is forwarded twice.
      await new Promise((resolve) => setTimeout(resolve, 400));
      const forwarded = receiver.received.slice(before);
      const hook = new Webhook(secret);
      const verified = forwarded.map(
        (r) => hook.verify(r.body, r.headers as Record<string, string>) as { id: string; type: string; data: any },
      );
      expect(verified.map((e) => e.type)).toEqual(["invoice.completed", "withdrawal.completed"]);
      expect(verified[0]!.data.invoice.id).toBe(fresh.id);
      expect(verified[1]!.data.request.id).toBe(made.requestId);
      const listed = (await merchant(server, m.apiKey, "GET", "/public/v1/events?limit=2")).body.data;
      expect(verified.map((e) => e.id)).toEqual(listed.map((e: { id: string }) => e.id).reverse());
      expect(forwarded.map((r) => r.headers["webhook-id"])).toEqual(verified.map((e) => e.id));
    } finally {
      child.kill("SIGINT");
    }
    expect(await exited).toBe(0);
    expect(stderr).toContain("withdrawal.completed");
  });
});
