// Screening in live mode (product §21) against a local chain, a list file and a local double of the Chainalysis sanctions API: incoming senders, operator decisions, outgoing destinations, and the ledger after each.
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { LocalChain, TestToken } from "../support/chain.ts";
import { balances } from "../support/invoices.ts";
import {
  auditAndExpect,
  CONFIRMATIONS,
  depositOf,
  getInvoice,
  liveInvoice,
  liveMerchant,
  mineAndScan,
  payer,
  paymentRows,
  scan,
  startLiveFixture,
  usdt,
} from "../support/live.ts";
import { adjust, refundCrypto } from "../support/refunds.ts";
import { DOUBLE_SCREENING_KEY, type ScreeningDouble, startScreeningDouble } from "../support/screeningDouble.ts";
import { admin, expectProblem, type TestServer } from "../support/server.ts";
import { balanceOf, fundedMerchant, withdraw } from "../support/withdrawals.ts";

let chain: LocalChain;
let token: TestToken;
let server: TestServer;
let provider: ScreeningDouble;
let folder: string;
let listPath: string;

/** Payers: 1 clean, 2 on the list file (written in upper case: EVM addresses compare without case), 3 identified by the provider, 4 listed later. */
const CLEAN = 1;
const LISTED = 2;
const IDENTIFIED = 3;
const LATER = 4;

beforeAll(async () => {
  provider = await startScreeningDouble();
  folder = mkdtempSync(join(tmpdir(), "screening-"));
  listPath = join(folder, "list.txt");
  // Placeholder line replaced once the chain's accounts are known.
  writeFileSync(listPath, "# screening list\n0x000000000000000000000000000000000000dEaD # a burn address\n");
  ({ chain, token, server } = await startLiveFixture({
    env: {
      SCREENING_LIST: listPath,
      SCREENING_PROVIDER_URL: provider.url,
      SCREENING_PROVIDER_KEY: DOUBLE_SCREENING_KEY,
      SCREENING_PROVIDER_TIMEOUT_MS: "300",
      SCREENING_CACHE_SECONDS: "0",
      SCREENING_RETRY_MS: "200",
      SCREENING_MAX_ATTEMPTS: "3",
    },
  }));
  const listed = payer(chain, LISTED);
  appendFileSync(listPath, `0x${listed.slice(2).toUpperCase()}\n`);
  provider.identified.add(payer(chain, IDENTIFIED).toLowerCase());
  for (const i of [LISTED, IDENTIFIED, LATER]) {
    await chain.waitForReceipt(await token.mint(payer(chain, i), usdt("1000")));
  }
}, 90_000);

afterAll(async () => {
  await server?.close();
  await chain?.close();
  await provider?.close();
  if (folder) rmSync(folder, { recursive: true, force: true });
});

/** A 10 USDT invoice paid by payer `from` and mined to depth; answers the invoice and its merchant. */
async function paidInvoice(from: number) {
  const m = await liveMerchant(server);
  const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "10" });
  await chain.waitForReceipt(await token.transfer(payer(chain, from), await depositOf(server, invoice.id), usdt("10")));
  await mineAndScan(server, chain, CONFIRMATIONS);
  return { m, invoice };
}

/** Runs the screening worker until the invoice leaves `status` (bounded). */
async function screenUntilNot(invoiceId: string, apiKey: string, status: string) {
  for (let i = 0; i < 50; i++) {
    const now = await getInvoice(server, apiKey, invoiceId);
    if (now.status !== status) return now;
    await server.workers.loops.screening?.runOnce();
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return getInvoice(server, apiKey, invoiceId);
}

async function eventTypes(invoiceId: string): Promise<string[]> {
  const rows = await server.ctx.store.db
    .selectFrom("events")
    .select("type")
    .where("subject_id", "=", invoiceId)
    .orderBy("created_at")
    .execute();
  return rows.map((r) => r.type);
}

describe("incoming payments: the sender is screened before anything is credited", () => {
  it("a transfer between two addresses that are no deposit address is not screened: no source is consulted", async () => {
    const from = payer(chain, CLEAN).toLowerCase();
    const sources = server.ctx.screening;
    if (!sources.list || !sources.provider) throw new Error("the list and the provider are configured");
    // The scanner consults the list and the provider's cache (the screening worker asks the provider itself).
    const spies = [
      vi.spyOn(sources.list, "check"),
      vi.spyOn(sources.provider, "cached"),
      vi.spyOn(sources.provider, "check"),
    ];
    const consulted: string[] = [];
    const before = provider.asked.length;
    try {
      await chain.waitForReceipt(
        await token.transfer(payer(chain, CLEAN), "0x00000000000000000000000000000000000b0b01", usdt("1")),
      );
      await mineAndScan(server, chain, CONFIRMATIONS);
      for (const spy of spies) consulted.push(...spy.mock.calls.map((call) => String(call[0]).toLowerCase()));
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
    // Only transfers to an invoice's deposit address become payments: only their senders are screened.
    expect(consulted.filter((address) => address === from)).toEqual([]);
    expect(provider.asked.slice(before).filter((path) => path.toLowerCase().endsWith(from))).toEqual([]);
  });

  it("a clean sender's payment completes the invoice and credits the merchant", async () => {
    const { m, invoice } = await paidInvoice(CLEAN);
    const after = await getInvoice(server, m.apiKey, invoice.id);
    expect(after.status).toBe("completed");
    expect((await balances(server, m.id)).USDT).toBe("9");
    expect(provider.asked.some((p) => p.endsWith(payer(chain, CLEAN).toLowerCase()))).toBe(true);
    await auditAndExpect(server);
  });

  it("a sender on the list file (any case): aml_check, nothing credited; block holds the funds for the operator; a second decision is 409", async () => {
    const { m, invoice } = await paidInvoice(LISTED);
    const flagged = await getInvoice(server, m.apiKey, invoice.id);
    expect(flagged.status).toBe("aml_check");
    expect((await balances(server, m.id)).USDT ?? "0").toBe("0");
    expect((await paymentRows(server, invoice.id)).map((p) => p.aml_status)).toEqual(["flagged"]);

    const blocked = await admin(server, "POST", `/invoices/${invoice.id}/aml`, { decision: "block" });
    expect(blocked.status).toBe(200);
    expect(blocked.body.status).toBe("aml_block");
    expect((await balances(server, m.id)).USDT ?? "0").toBe("0");
    const held = await server.ctx.store.db
      .selectFrom("ledger_entries")
      .select(["account", "amount"])
      .where("account", "=", "operator:screening_held")
      .execute();
    expect(held.map((h) => BigInt(h.amount)).reduce((a, b) => a + b, 0n)).toBe(usdt("10"));
    expect(await eventTypes(invoice.id)).toEqual(expect.arrayContaining(["invoice.aml_check", "invoice.aml_block"]));
    const audit = await server.ctx.store.db
      .selectFrom("aml_decisions")
      .selectAll()
      .where("invoice_id", "=", invoice.id)
      .execute();
    expect(audit.map((a) => [a.decision, a.actor, a.status_after])).toEqual([["block", "operator", "aml_block"]]);

    expectProblem(
      await admin(server, "POST", `/invoices/${invoice.id}/aml`, { decision: "clear" }),
      409,
      "invoice_not_in_aml_check",
    );
    // The listed sender is no refund destination either.
    const refund = await refundCrypto(server, { ...m }, { invoiceId: invoice.id, withdrawToSameAddress: true });
    expect(refund.answer.status).toBe(400);
    await auditAndExpect(server);
  });

  it("a sender the provider identifies: aml_check; clear completes it and credits it once", async () => {
    const { m, invoice } = await paidInvoice(IDENTIFIED);
    const flagged = await screenUntilNot(invoice.id, m.apiKey, "processing");
    expect(flagged.status).toBe("aml_check");
    expect((await balances(server, m.id)).USDT ?? "0").toBe("0");
    const cleared = await admin(server, "POST", `/invoices/${invoice.id}/aml`, { decision: "clear" });
    expect(cleared.status).toBe(200);
    expect(cleared.body.status).toBe("completed");
    expect((await balances(server, m.id)).USDT).toBe("9");
    expectProblem(
      await admin(server, "POST", `/invoices/${invoice.id}/aml`, { decision: "clear" }),
      409,
      "invoice_not_in_aml_check",
    );
    await scan(server);
    expect((await balances(server, m.id)).USDT).toBe("9");
    await auditAndExpect(server);
  });

  it("a provider that hangs: the payment waits for screening (never completed), then aml_check after the last attempt", async () => {
    provider.mode = "hang";
    try {
      const { m, invoice } = await paidInvoice(CLEAN);
      const waiting = await getInvoice(server, m.apiKey, invoice.id);
      expect(waiting.status).toBe("processing");
      expect((await balances(server, m.id)).USDT ?? "0").toBe("0");
      const overview = await admin(server, "GET", "/screening");
      expect(overview.status).toBe(200);
      expect(overview.body.provider.available).toBe(false);
      const flagged = await screenUntilNot(invoice.id, m.apiKey, "processing");
      expect(flagged.status).toBe("aml_check");
      const [row] = await paymentRows(server, invoice.id);
      expect([row?.aml_status, row?.screening_reason, row?.screening_attempts]).toEqual([
        "flagged",
        "screening_unavailable",
        2,
      ]);
      expect((await balances(server, m.id)).USDT ?? "0").toBe("0");
      await auditAndExpect(server);
    } finally {
      provider.mode = "normal";
    }
  });

  it("a provider answering 500, then recovering: the payment is retried and completes once screened", async () => {
    provider.mode = "error500";
    let paid: Awaited<ReturnType<typeof paidInvoice>>;
    try {
      paid = await paidInvoice(CLEAN);
    } catch (error) {
      provider.mode = "normal";
      throw error;
    }
    const { m, invoice } = paid;
    expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("processing");
    const metrics = await fetch(`${server.baseUrl}/metrics`, {
      headers: { authorization: `Bearer ${server.adminToken}` },
    });
    const text = await metrics.text();
    expect(text).toMatch(/payments_screening_waiting_payments [1-9]/);
    expect(text).toMatch(/payments_screening_provider_up 0/);
    provider.mode = "normal";
    const done = await screenUntilNot(invoice.id, m.apiKey, "processing");
    expect(done.status).toBe("completed");
    expect((await balances(server, m.id)).USDT).toBe("9");
    expect((await admin(server, "GET", "/screening")).body.waitingPayments).toBe(0);
    await auditAndExpect(server);
  });

  it("a provider answering garbage or a huge body is no answer: nothing credited", async () => {
    for (const mode of ["garbage", "huge"] as const) {
      provider.mode = mode;
      try {
        const { m, invoice } = await paidInvoice(CLEAN);
        expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("processing");
        expect((await balances(server, m.id)).USDT ?? "0").toBe("0");
        expect((await admin(server, "GET", "/screening")).body.provider.lastFailure).toMatch(
          mode === "huge" ? /larger than/ : /not \{ identifications/,
        );
        provider.mode = "normal";
        expect((await screenUntilNot(invoice.id, m.apiKey, "processing")).status).toBe("completed");
      } finally {
        provider.mode = "normal";
      }
    }
    await auditAndExpect(server);
  });
});

describe("a payment after completion (an overpayment)", () => {
  it("is credited only once its sender is screened clear", async () => {
    const { m, invoice } = await paidInvoice(CLEAN);
    expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("completed");
    provider.mode = "error500";
    try {
      await chain.waitForReceipt(
        await token.transfer(payer(chain, CLEAN), await depositOf(server, invoice.id), usdt("5")),
      );
      await mineAndScan(server, chain, CONFIRMATIONS);
      const rows = await paymentRows(server, invoice.id);
      expect(rows.map((r) => [r.amount, r.aml_status, r.confirmed]).sort()).toEqual([
        [String(usdt("10")), "none", 1],
        [String(usdt("5")), "unscreened", 1],
      ]);
      expect((await balances(server, m.id)).USDT).toBe("9");
    } finally {
      provider.mode = "normal";
    }
    for (let i = 0; i < 50 && (await admin(server, "GET", "/screening")).body.waitingPayments > 0; i++) {
      await server.workers.loops.screening?.runOnce();
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect((await balances(server, m.id)).USDT).toBe("14");
    await scan(server);
    expect((await balances(server, m.id)).USDT).toBe("14");
    await auditAndExpect(server);
  });
});

describe("the list file changes while the service runs", () => {
  it("an address added is listed from then on; a malformed line is refused and the last good list kept", async () => {
    appendFileSync(listPath, `${payer(chain, LATER)}\n`);
    const { m, invoice } = await paidInvoice(LATER);
    expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("aml_check");
    const before = (await admin(server, "GET", "/screening")).body.list;
    expect(before.entries).toBe(3);
    expect(before.lastError).toBeNull();

    appendFileSync(listPath, "not an address, line 6\n");
    const method = await admin(server, "POST", `/merchants/${m.id}/withdrawal-methods`, {
      currency: "USDT",
      address: payer(chain, LATER),
    });
    expectProblem(method, 400, "destination_screened");
    const after = (await admin(server, "GET", "/screening")).body.list;
    expect(after.entries).toBe(3);
    expect(after.lastError).toMatch(/line 5: not an address/);
    // Fixed: taken again.
    writeFileSync(listPath, `0x${payer(chain, LISTED).slice(2).toUpperCase()}\n${payer(chain, LATER)}\n`);
    expect((await admin(server, "POST", `/invoices/${invoice.id}/aml`, { decision: "block" })).status).toBe(200);
    expect((await admin(server, "GET", "/screening")).body.list).toMatchObject({ entries: 2, lastError: null });
    await auditAndExpect(server);
  });
});

describe("outgoing: a listed destination is refused, and checked again before a payout is signed", () => {
  // First: a refund payout queued ahead (the hot wallet holds no USDT) would keep this one waiting its turn.
  it("a withdrawal whose destination became listed: refused when created, and failed and credited back before signing", async () => {
    const m = await fundedMerchant(server);
    const method = await server.ctx.store.db
      .selectFrom("withdrawal_methods")
      .select("address")
      .where("id", "=", m.methodId)
      .executeTakeFirstOrThrow();
    const accepted = await withdraw(server, m);
    expect(accepted.answer.status).toBe(200);
    expect(await balanceOf(server, m.id)).toBe("990");
    appendFileSync(listPath, `${method.address}\n`);
    await server.workers.loops.chainPayouts?.runOnce();
    const payout = await server.ctx.store.db
      .selectFrom("payouts")
      .select(["state", "processor_status"])
      .where("destination", "=", method.address)
      .executeTakeFirstOrThrow();
    expect(payout).toEqual({ state: "failed", processor_status: "destination_screened" });
    expect(await balanceOf(server, m.id)).toBe("1000");
    expectProblem((await withdraw(server, m)).answer, 400, "destination_screened");
    await auditAndExpect(server);
  });

  it("a listed withdrawal address and refund destination are 400 destination_screened", async () => {
    const m = await fundedMerchant(server);
    const listed = payer(chain, LISTED);
    expectProblem(
      await admin(server, "POST", `/merchants/${m.id}/withdrawal-methods`, {
        currency: "USDT",
        address: listed.toLowerCase(),
      }),
      400,
      "destination_screened",
    );
    const { m: payee, invoice } = await paidInvoice(CLEAN);
    const refused = await refundCrypto(server, payee, { invoiceId: invoice.id, address: listed });
    expectProblem(refused.answer, 400, "destination_screened");
    // The refund returns paid_amount (10): the merchant's 9 need the network fee added.
    await adjust(server, payee.id, "USDT", "1");
    const fine = await refundCrypto(server, payee, { invoiceId: invoice.id, address: `0x${"ab".repeat(20)}` });
    expect(fine.answer.status, fine.answer.text).toBe(200);
    await auditAndExpect(server);
  });
});

describe("bad decisions", () => {
  it("a decision on an invoice not in aml_check is 409, on an unknown invoice 404, and a bad body 400", async () => {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "10" });
    expectProblem(
      await admin(server, "POST", `/invoices/${invoice.id}/aml`, { decision: "clear" }),
      409,
      "invoice_not_in_aml_check",
    );
    expectProblem(
      await admin(server, "POST", "/invoices/00000000-0000-0000-0000-000000000000/aml", { decision: "block" }),
      404,
      "invoice_not_found",
    );
    expect((await admin(server, "POST", `/invoices/${invoice.id}/aml`, { decision: "maybe" })).status).toBe(400);
    expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("pending");
    await auditAndExpect(server);
  });
});
