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

/** A 10 USDT invoice that expired unpaid (expires_at passed and the scanner saw a block after it). */
async function expiredInvoice() {
  const m = await liveMerchant(server);
  const expiresAt = new Date(Date.now() + 3000).toISOString();
  const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "10", expiresAt });
  // Block stamps are whole seconds: a block mined a second after expires_at is stamped after it.
  await new Promise((resolve) => setTimeout(resolve, Date.parse(expiresAt) - Date.now() + 1100));
  await mineAndScan(server, chain, 1);
  await server.workers.loops.expiry?.runOnce();
  expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("expired");
  return { m, invoice };
}

/** What the operator's screening account holds, all currencies together. */
async function heldTotal(): Promise<bigint> {
  const held = await server.ctx.store.db
    .selectFrom("ledger_entries")
    .select("amount")
    .where("account", "=", "operator:screening_held")
    .execute();
  return held.map((h) => BigInt(h.amount)).reduce((a, b) => a + b, 0n);
}

describe("a flagged late payment (it reached the invoice after it stopped taking payments)", () => {
  it("to an expired invoice: a resolution leaves it out (409 payments_under_aml_review when only it is left); cleared by its paymentId, a later resolution covers it", async () => {
    const { m, invoice } = await expiredInvoice();
    const deposit = await depositOf(server, invoice.id);
    await chain.waitForReceipt(await token.transfer(payer(chain, LISTED), deposit, usdt("5")));
    await mineAndScan(server, chain, CONFIRMATIONS);
    const [flagged] = await paymentRows(server, invoice.id);
    expect([flagged?.late, flagged?.aml_status, flagged?.confirmed]).toEqual([1, "flagged", 1]);
    // The operator finds the payment's id in the invoice's operator view.
    const view = await admin(server, "GET", `/invoices/${invoice.id}`);
    expect(view.body.payments).toEqual([
      expect.objectContaining({ id: flagged?.id, amount: "5", late: true, amlStatus: "flagged", confirmed: true }),
    ]);
    const dest = "0x00000000000000000000000000000000000f00d5";
    // Neither credited to the merchant nor refunded to anyone while flagged.
    for (const body of [{ action: "accept" }, { action: "refund", address: dest }]) {
      expectProblem(
        await admin(server, "POST", `/invoices/${invoice.id}/resolve`, body),
        409,
        "payments_under_aml_review",
      );
    }
    // A clean late payment beside it is resolved on its own: the refund returns 6 less the network fee (1), not 11.
    await chain.waitForReceipt(await token.transfer(payer(chain, CLEAN), deposit, usdt("6")));
    await mineAndScan(server, chain, CONFIRMATIONS);
    const refunded = await admin(server, "POST", `/invoices/${invoice.id}/resolve`, {
      action: "refund",
      address: dest,
    });
    expect(refunded.status, refunded.text).toBe(200);
    const refunds = await server.ctx.store.db
      .selectFrom("refunds")
      .select("amount")
      .where("invoice_id", "=", invoice.id)
      .execute();
    expect(refunds.map((r) => String(r.amount))).toEqual([String(usdt("5"))]);
    expect((await paymentRows(server, invoice.id)).find((p) => p.id === flagged?.id)?.resolved_at).toBeNull();

    // The invoice is not in aml_check: the decision names the payment.
    expectProblem(
      await admin(server, "POST", `/invoices/${invoice.id}/aml`, { decision: "clear" }),
      409,
      "invoice_not_in_aml_check",
    );
    const events = (await eventTypes(invoice.id)).length;
    const cleared = await admin(server, "POST", `/invoices/${invoice.id}/aml`, {
      decision: "clear",
      paymentId: flagged?.id,
    });
    expect(cleared.status, cleared.text).toBe(200);
    expect(cleared.body.status).toBe("expired");
    expect((await eventTypes(invoice.id)).length).toBe(events + 1);
    expectProblem(
      await admin(server, "POST", `/invoices/${invoice.id}/aml`, { decision: "block", paymentId: flagged?.id }),
      409,
      "payment_not_flagged",
    );
    // Cleared, it counts like any late payment: accepted, 5 less the network fee (1) is credited.
    const accepted = await admin(server, "POST", `/invoices/${invoice.id}/resolve`, { action: "accept" });
    expect(accepted.status, accepted.text).toBe(200);
    expect((await balances(server, m.id)).USDT).toBe("4");
    const audit = await server.ctx.store.db
      .selectFrom("aml_decisions")
      .select(["decision", "actor", "status_after", "payment_id"])
      .where("invoice_id", "=", invoice.id)
      .execute();
    expect(audit).toEqual([{ decision: "clear", actor: "operator", status_after: "expired", payment_id: flagged?.id }]);
    await auditAndExpect(server);
  });

  it("to a completed invoice: never credited; block by its paymentId holds its funds for the operator once it confirms, once; a second decision is 409", async () => {
    const { m, invoice } = await paidInvoice(CLEAN);
    expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("completed");
    const heldBefore = await heldTotal();
    await chain.waitForReceipt(
      await token.transfer(payer(chain, LISTED), await depositOf(server, invoice.id), usdt("5")),
    );
    // Seen, not confirmed yet.
    await mineAndScan(server, chain, 1);
    const late = (await paymentRows(server, invoice.id)).find((p) => p.late === 1);
    expect([late?.aml_status, late?.confirmed]).toEqual(["flagged", 0]);
    const onTime = (await paymentRows(server, invoice.id)).find((p) => p.late !== 1);
    expectProblem(
      await admin(server, "POST", `/invoices/${invoice.id}/aml`, { decision: "block" }),
      409,
      "invoice_not_in_aml_check",
    );
    expectProblem(
      await admin(server, "POST", `/invoices/${invoice.id}/aml`, { decision: "block", paymentId: onTime?.id }),
      409,
      "payment_not_flagged",
    );
    expectProblem(
      await admin(server, "POST", `/invoices/${invoice.id}/aml`, { decision: "block", paymentId: "no-such-payment" }),
      404,
      "payment_not_found",
    );
    const blocked = await admin(server, "POST", `/invoices/${invoice.id}/aml`, {
      decision: "block",
      paymentId: late?.id,
    });
    expect(blocked.status, blocked.text).toBe(200);
    expect(blocked.body.status).toBe("completed");
    expect(await heldTotal()).toBe(heldBefore);
    await mineAndScan(server, chain, CONFIRMATIONS);
    expect(await heldTotal()).toBe(heldBefore + usdt("5"));
    await scan(server);
    expect(await heldTotal()).toBe(heldBefore + usdt("5"));
    expect((await balances(server, m.id)).USDT).toBe("9");
    expectProblem(
      await admin(server, "POST", `/invoices/${invoice.id}/aml`, { decision: "clear", paymentId: late?.id }),
      409,
      "payment_not_flagged",
    );
    const audit = await server.ctx.store.db
      .selectFrom("aml_decisions")
      .select(["decision", "status_after", "payment_id"])
      .where("invoice_id", "=", invoice.id)
      .execute();
    expect(audit).toEqual([{ decision: "block", status_after: "completed", payment_id: late?.id }]);
    await auditAndExpect(server);
  });

  it("cleared on a completed invoice: credited once as an overpayment", async () => {
    const { m, invoice } = await paidInvoice(CLEAN);
    await chain.waitForReceipt(
      await token.transfer(payer(chain, LISTED), await depositOf(server, invoice.id), usdt("5")),
    );
    await mineAndScan(server, chain, CONFIRMATIONS);
    expect((await balances(server, m.id)).USDT).toBe("9");
    const late = (await paymentRows(server, invoice.id)).find((p) => p.late === 1);
    const cleared = await admin(server, "POST", `/invoices/${invoice.id}/aml`, {
      decision: "clear",
      paymentId: late?.id,
    });
    expect(cleared.status, cleared.text).toBe(200);
    expect((await balances(server, m.id)).USDT).toBe("14");
    await scan(server);
    expect((await balances(server, m.id)).USDT).toBe("14");
    await auditAndExpect(server);
  });

  it("an invoice in aml_check with a flagged late payment: the invoice's decision leaves the late one to its own; an on-time payment's id is 409 payment_not_late", async () => {
    const m = await liveMerchant(server);
    const expiresAt = new Date(Date.now() + 4000).toISOString();
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "10", expiresAt });
    const deposit = await depositOf(server, invoice.id);
    await chain.waitForReceipt(await token.transfer(payer(chain, LISTED), deposit, usdt("10")));
    await mineAndScan(server, chain, CONFIRMATIONS);
    expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("aml_check");
    await new Promise((resolve) => setTimeout(resolve, Date.parse(expiresAt) - Date.now() + 1100));
    await chain.waitForReceipt(await token.transfer(payer(chain, LISTED), deposit, usdt("5")));
    await mineAndScan(server, chain, CONFIRMATIONS);
    const rows = await paymentRows(server, invoice.id);
    const onTime = rows.find((p) => p.late !== 1);
    const late = rows.find((p) => p.late === 1);
    expect([onTime?.aml_status, late?.aml_status]).toEqual(["flagged", "flagged"]);
    expectProblem(
      await admin(server, "POST", `/invoices/${invoice.id}/aml`, { decision: "clear", paymentId: onTime?.id }),
      409,
      "payment_not_late",
    );
    const cleared = await admin(server, "POST", `/invoices/${invoice.id}/aml`, { decision: "clear" });
    expect(cleared.body.status).toBe("completed");
    expect((await balances(server, m.id)).USDT).toBe("9");
    expect((await paymentRows(server, invoice.id)).find((p) => p.id === late?.id)?.aml_status).toBe("flagged");
    const lateCleared = await admin(server, "POST", `/invoices/${invoice.id}/aml`, {
      decision: "clear",
      paymentId: late?.id,
    });
    expect(lateCleared.status, lateCleared.text).toBe(200);
    expect((await balances(server, m.id)).USDT).toBe("14");
    await auditAndExpect(server);
  });
});
