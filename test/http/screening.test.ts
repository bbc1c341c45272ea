// Screening in the sandbox (product §21): the list file is one more source beside the simulated flag, through the same code as live mode; a bad list stops the start.
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.ts";
import { invitedUser } from "../support/dashboard.ts";
import { createInvoice, expectHealthyLedger } from "../support/invoices.ts";
import { adjust, completedInvoice, feeFreeMerchant } from "../support/refunds.ts";
import { DOUBLE_SCREENING_KEY, startScreeningDouble } from "../support/screeningDouble.ts";
import {
  admin,
  call,
  createMerchant,
  expectProblem,
  merchant,
  startTestServer,
  type TestServer,
} from "../support/server.ts";
import { signedCall } from "../support/signing.ts";
import { balanceOf, fundedMerchant, payoutWorker, withdraw } from "../support/withdrawals.ts";

const LISTED = "0x8589427373D6D84E98730D7795D8f6f8731FDA16";
let server: TestServer;
let folder: string;
let listPath: string;

beforeAll(async () => {
  folder = mkdtempSync(join(tmpdir(), "screening-sandbox-"));
  listPath = join(folder, "list.txt");
  writeFileSync(listPath, `${LISTED.toLowerCase()}\n`);
  server = await startTestServer({ env: { SCREENING_LIST: listPath } });
});

afterAll(async () => {
  await server?.close();
  rmSync(folder, { recursive: true, force: true });
});

describe("screening in the sandbox", () => {
  it("a sandbox payment from a listed sender goes to aml_check without the simulated flag; a clean one completes", async () => {
    const m = await createMerchant(server);
    const flagged = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 10 });
    const paid = await merchant(server, m.apiKey, "POST", `/sandbox/v1/invoices/${flagged.id}/payments`, {
      fromAddress: LISTED,
    });
    expect(paid.body.status).toBe("aml_check");
    const clean = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 10 });
    const paidClean = await merchant(server, m.apiKey, "POST", `/sandbox/v1/invoices/${clean.id}/payments`, {
      fromAddress: `0x${"12".repeat(20)}`,
    });
    expect(paidClean.body.status).toBe("completed");
    const decided = await admin(server, "POST", `/invoices/${flagged.id}/aml`, { decision: "clear" });
    expect(decided.body.status).toBe("completed");
    const overview = await admin(server, "GET", "/screening");
    expect(overview.body).toMatchObject({ list: { entries: 1, lastError: null }, provider: null, waitingPayments: 0 });
  });

  it("refuses a listed withdrawal method address with destination_screened, in the operator API and the dashboard", async () => {
    const m = await createMerchant(server);
    expectProblem(
      await admin(server, "POST", `/merchants/${m.id}/withdrawal-methods`, { currency: "USDT", address: LISTED }),
      400,
      "destination_screened",
    );
    const owner = await invitedUser(server, m.id, "owner");
    expectProblem(
      await owner.call("POST", "/withdrawal-methods", { currency: "USDT", address: LISTED.toLowerCase() }),
      400,
      "destination_screened",
    );
    const clean = await owner.call("POST", "/withdrawal-methods", {
      currency: "USDT",
      address: `0x${"56".repeat(20)}`,
    });
    expect(clean.status).toBe(200);
  });

  it("a list file that is malformed at start stops the start", async () => {
    const bad = join(folder, "bad.txt");
    writeFileSync(bad, "0x8589427373D6D84E98730D7795D8f6f8731FDA16\nnot-an-address!\n");
    await expect(startTestServer({ env: { SCREENING_LIST: bad } })).rejects.toThrow(/SCREENING_LIST: .*line 2/);
  });

  it("refuses a refund to a listed address, and a refund claim at its link with a listed address; a clean one is claimed", async () => {
    const m = await feeFreeMerchant(server);
    const invoice = await completedInvoice(server, m, { currency: "USDT", amount: "100" }, [
      { fromAddress: "0xpayer" },
    ]);
    await adjust(server, m.id, "USDT", "10");
    const direct = await signedCall(server.baseUrl, {
      apiKey: m.apiKey,
      secret: m.secretKey,
      path: "/public/v1/refunds/create",
      body: { invoiceId: invoice.id, type: "crypto", amount: "5", address: LISTED },
    });
    expectProblem(direct.answer, 400, "destination_screened");
    const created = await signedCall(server.baseUrl, {
      apiKey: m.apiKey,
      secret: m.secretKey,
      path: "/public/v1/refunds/create",
      body: { invoiceId: invoice.id, type: "crypto", amount: "5", claim: true },
    });
    expect(created.answer.status).toBe(200);
    const path = new URL(created.answer.body.claimUrl).pathname;
    const refused = await call(server.baseUrl, "POST", path, {
      body: { address: LISTED.toUpperCase().replace("0X", "0x") },
    });
    expectProblem(refused, 400, "destination_screened");
    const form = await call(server.baseUrl, "POST", path, {
      rawBody: `address=${LISTED}`,
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(form.status).toBe(400);
    expect(form.text).toContain("screening (sanctions) list");
    const claimed = await call(server.baseUrl, "POST", path, { body: { address: `0x${"34".repeat(20)}` } });
    expect(claimed.status).toBe(200);
    await expectHealthyLedger(server);
  });

  it("half a provider configuration is refused at start", () => {
    expect(() => loadConfig({ SCREENING_PROVIDER_URL: "https://api.chainalysis.com" })).toThrow(/go together/);
    expect(() => loadConfig({ SCREENING_PROVIDER_URL: "ftp://x", SCREENING_PROVIDER_KEY: "k" })).toThrow(/http/);
  });
});

/** The payout of a withdrawal, by its destination (each test's method has its own random address). */
async function payoutTo(on: TestServer, destination: string) {
  return on.ctx.store.db
    .selectFrom("payouts")
    .select(["state", "processor_status", "attempts"])
    .where("destination", "=", destination)
    .executeTakeFirstOrThrow();
}

async function methodAddress(on: TestServer, methodId: number): Promise<string> {
  const row = await on.ctx.store.db
    .selectFrom("withdrawal_methods")
    .select("address")
    .where("id", "=", methodId)
    .executeTakeFirstOrThrow();
  return row.address;
}

describe("sandbox payouts are screened just before their hand-over", () => {
  it("a destination listed after the withdrawal was accepted: the payout fails with destination_screened, not handed over, and the merchant is credited back", async () => {
    const m = await fundedMerchant(server);
    const address = await methodAddress(server, m.methodId);
    const accepted = await withdraw(server, m);
    expect(accepted.answer.status, accepted.answer.text).toBe(200);
    expect(await balanceOf(server, m.id)).toBe("990");
    appendFileSync(listPath, `${address}\n`);
    await payoutWorker(server).runOnce();
    expect(await payoutTo(server, address)).toMatchObject({
      state: "failed",
      processor_status: "destination_screened",
    });
    expect(await balanceOf(server, m.id)).toBe("1000");
    await expectHealthyLedger(server);
  });

  it("a destination that cannot be screened: the payout waits in the queue (not handed over) and goes once screening answers", async () => {
    const provider = await startScreeningDouble();
    let withProvider: TestServer | undefined;
    try {
      withProvider = await startTestServer({
        env: {
          SCREENING_PROVIDER_URL: provider.url,
          SCREENING_PROVIDER_KEY: DOUBLE_SCREENING_KEY,
          SCREENING_PROVIDER_TIMEOUT_MS: "300",
          SCREENING_CACHE_SECONDS: "0",
        },
      });
      const m = await fundedMerchant(withProvider);
      const address = await methodAddress(withProvider, m.methodId);
      expect((await withdraw(withProvider, m)).answer.status).toBe(200);
      provider.mode = "error500";
      for (let i = 0; i < 2; i++) {
        await payoutWorker(withProvider).runOnce();
        expect(await payoutTo(withProvider, address)).toMatchObject({ state: "queued", attempts: 0 });
      }
      expect(await balanceOf(withProvider, m.id)).toBe("990");
      provider.mode = "normal";
      await payoutWorker(withProvider).runOnce();
      expect(await payoutTo(withProvider, address)).toMatchObject({ state: "sent", attempts: 1 });
      await expectHealthyLedger(withProvider);
    } finally {
      await withProvider?.close();
      await provider.close();
    }
  });
});
