// The built `payments` executable on product §25: `refunds create` (partial and claim) and `payment-links` create, list, get, invoices, deactivate.
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectHealthyLedger } from "../../../../test/support/invoices.ts";
import { adjust, completedInvoice, feeFreeMerchant } from "../../../../test/support/refunds.ts";
import { startTestServer, type TestServer } from "../../../../test/support/server.ts";

const BIN = fileURLToPath(new URL("../../bin/payments.js", import.meta.url));

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

function run(args: string[], extra: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const env = { PATH: process.env.PATH ?? "", PAYMENTS_BASE_URL: server.baseUrl, ...extra };
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

describe("payments CLI, refunds and payment links", () => {
  it("creates partial and claim refunds, and reports the over-refundable as an API error", async () => {
    const m = await feeFreeMerchant(server);
    const key = { PAYMENTS_API_KEY: m.apiKey, PAYMENTS_SECRET_KEY: m.secretKey };
    const invoice = await completedInvoice(server, m, { currency: "USDT", amount: "100" });
    await adjust(server, m.id, "USDT", "5");
    const partial = await json(["refunds", "create", invoice.id, "--amount", "30", "--address", "0xreturn"], key);
    expect(partial.request).toMatchObject({ amount: "30", to_address: "0xreturn", status: "processing" });
    const claim = await json(
      ["refunds", "create", invoice.id, "--amount", "20", "--claim", "--fee-paid-by", "merchant"],
      key,
    );
    expect(claim.claimUrl).toMatch(/\/refund\/[A-Za-z0-9_-]{43}$/);
    const over = await run(["refunds", "create", invoice.id, "--amount", "60", "--address", "0xreturn"], key);
    expect(over.code).toBe(1);
    expect(over.stdout + over.stderr).toContain("amount_exceeds_refundable");
    const usage = await run(["refunds", "create", invoice.id, "--amount", "1", "--fee-paid-by", "nobody"], key);
    expect(usage.code).toBe(2);
    await expectHealthyLedger(server);
  });

  it("creates, lists, reads and deactivates payment links, and lists the invoices a link made", async () => {
    const m = await feeFreeMerchant(server);
    const key = { PAYMENTS_API_KEY: m.apiKey };
    const link = await json(
      ["payment-links", "create", "--currency", "USDT", "--amount", "25", "--description", "Mug"],
      key,
    );
    expect(link).toMatchObject({ currency: "USDT", amount: "25", description: "Mug", active: true });
    expect(await json(["payment-links", "get", link.id], key)).toEqual(link);
    expect((await json<{ id: string }[]>(["payment-links", "list"], key)).map((l) => l.id)).toEqual([link.id]);
    // The payer's Pay button (a form POST) makes the invoice; a look makes none.
    const form = { "content-type": "application/x-www-form-urlencoded" };
    expect((await fetch(link.url, { method: "POST", headers: form, body: "", redirect: "manual" })).status).toBe(303);
    const invoices = await json<{ amount: string }[]>(["payment-links", "invoices", link.id], key);
    expect(invoices.map((i) => i.amount)).toEqual(["25"]);
    const table = await run(["payment-links", "list"], key);
    expect(table.stdout.split("\n")[0]).toMatch(/^ID\s+CURRENCY\s+AMOUNT/);
    const off = await json(["payment-links", "deactivate", link.id], key);
    expect(off.active).toBe(false);
    expect((await fetch(link.url, { redirect: "manual" })).status).toBe(410);
  });
});
