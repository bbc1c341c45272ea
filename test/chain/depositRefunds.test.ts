// The merchant's refund of a held deposit by claim link (product §30, §25) on a local chain: the hold pays a claim refund less the network fee, the payer claims it and the payout settles (the deposit stays refunded); an expired claim or a failed payout credits the hold back and the deposit is held again; racing refund and credit calls move it once; the deposit carries its refund and its deposit.refund_* events, never a refund request object (whose invoice_id is never null); the ledger audit after each.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { depositHoldAccount } from "../../src/domain/depositAddresses.ts";
import type { LocalChain, TestToken } from "../support/chain.ts";
import { invitedUser, PASSWORD } from "../support/dashboard.ts";
import {
  auditAndExpect,
  CONFIRMATIONS,
  getDeposit,
  listDeposits,
  mineAndScan,
  payer,
  startLiveFixture,
  usdt,
  usdtEntry,
} from "../support/live.ts";
import { admin, call, createMerchant, expectProblem, merchant, type TestServer } from "../support/server.ts";

let chain: LocalChain;
let token: TestToken;
let server: TestServer;
let shop: { id: string; apiKey: string };
/** A customer's deactivated address: what it receives is held for the merchant's decision. */
let inactive: string;
const SENDER = 1;
/** The address's own callback URL: its deposits' events go there, not to the merchant's default. */
const CALLBACK_URL = "https://merchant-hooks.test/deposit-refunds";

beforeAll(async () => {
  ({ chain, token, server } = await startLiveFixture());
  shop = await createMerchant(server, { feePercent: "1" });
  const created = await merchant(server, shop.apiKey, "POST", "/public/v1/deposit-addresses", {
    customer: "cust-refund",
    currency: "USDT",
    callbackUrl: CALLBACK_URL,
  });
  expect(created.status, created.text).toBe(200);
  inactive = created.body.address;
  const off = await merchant(server, shop.apiKey, "PATCH", `/public/v1/deposit-addresses/${created.body.id}`, {
    active: false,
  });
  expect(off.status, off.text).toBe(200);
}, 120_000);

afterAll(async () => {
  await server?.close();
  await chain?.close();
});

/** A transfer of `amount` USDT to the deactivated address, mined to depth and scanned: the held deposit it made. */
async function heldDeposit(amount: string): Promise<Record<string, any>> {
  const before = new Set((await deposits()).map((d) => d.id));
  await chain.waitForReceipt(await token.transfer(payer(chain, SENDER), inactive as `0x${string}`, usdt(amount)));
  await mineAndScan(server, chain, CONFIRMATIONS + 1);
  const made = (await deposits()).filter((d) => !before.has(d.id));
  expect(made.map((d) => [d.amount, d.status])).toEqual([[amount, "held"]]);
  return made[0] as Record<string, any>;
}

const deposits = () => listDeposits(server, shop.apiKey);
const depositById = (id: string) => getDeposit(server, shop.apiKey, id);

async function depositStatus(id: string): Promise<string> {
  return (await depositById(id)).status;
}

const resolve = (id: string, action: "credit" | "refund") =>
  merchant(server, shop.apiKey, "POST", `/public/v1/deposits/${id}/resolve`, { action });

/** What the merchant's deposit hold holds, in minor units of the entry. */
async function hold(): Promise<bigint> {
  const rows = await server.ctx.store.db
    .selectFrom("ledger_entries")
    .select("amount")
    .where("account", "=", depositHoldAccount(shop.id))
    .execute();
  return rows.reduce((sum, r) => sum + BigInt(r.amount), 0n);
}

/**
 * A deposit's refund is no refund request object of the interface: GET /refunds/{id} is a 404, the
 * refund list leaves it out, and the deposit (by id and in the list) carries it, without its claim link.
 */
async function expectCarriedByDeposit(depositId: string, refundId: string): Promise<Record<string, any>> {
  expectProblem(await merchant(server, shop.apiKey, "GET", `/public/v1/refunds/${refundId}`), 404, "refund_not_found");
  const list = await merchant(server, shop.apiKey, "GET", "/public/v1/refunds?limit=100");
  expect(list.status, list.text).toBe(200);
  expect(list.body.data.map((r: { id: string }) => r.id)).not.toContain(refundId);
  const one = await depositById(depositId);
  expect(one.refund.id).toBe(refundId);
  expect(one.refund).not.toHaveProperty("claimUrl");
  expect((await deposits()).find((d) => d.id === depositId)).toEqual(one);
  return one;
}

/**
 * The merchant's events about one deposit, by type; no event at all names its refund as a request
 * object, and no event body has a null invoice_id. Each deposit event's callback is queued to the
 * address's callback URL.
 */
async function depositEvents(depositId: string, refundId: string): Promise<string[]> {
  const events = await merchant(server, shop.apiKey, "GET", "/public/v1/events?limit=100");
  expect(events.status, events.text).toBe(200);
  for (const e of events.body.data) {
    expect(JSON.stringify(e)).not.toContain('"invoice_id":null');
    expect(e.data.request?.id).not.toBe(refundId);
  }
  const mine = events.body.data.filter((e: { data: { deposit?: { id: string } } }) => e.data.deposit?.id === depositId);
  const queued = await server.ctx.store.db
    .selectFrom("callback_events")
    .select(["id", "url"])
    .where("subject_id", "=", depositId)
    .execute();
  expect(queued.map((c) => c.url)).toEqual(mine.map(() => CALLBACK_URL));
  expect(queued.map((c) => c.id).sort()).toEqual(mine.map((e: { id: string }) => e.id).sort());
  return mine.map((e: { type: string }) => e.type).sort();
}

/** Refunds the held deposit: the answer's refund (with its claim link), the link's path and the deposit as answered. */
async function refund(depositId: string) {
  const answer = await resolve(depositId, "refund");
  expect(answer.status, answer.text).toBe(200);
  expect(answer.body.status).toBe("refunded");
  const url = new URL(answer.body.refund.claimUrl);
  expect(url.pathname).toMatch(/^\/refund\/[A-Za-z0-9_-]{43}$/);
  return { refund: answer.body.refund, path: url.pathname, answer: answer.body };
}

function claim(path: string) {
  return call(server.baseUrl, "POST", path, { body: { address: payer(chain, SENDER) } });
}

describe("the merchant refunds a held deposit by claim link", () => {
  it("debits the hold, the payer claims it, the payout settles completed; the deposit stays refunded and carries its refund", async () => {
    const held = await heldDeposit("10");
    expect(held.refund).toBeNull();
    expect(await hold()).toBe(usdt("10"));
    const { refund: made, path, answer } = await refund(held.id);
    // The payer bears the entry's network fee (1 USDT): 9 arrive.
    expect(made).toMatchObject({
      status: "awaiting_claim",
      amount: "9",
      networkFee: "1",
      toAddress: null,
      payoutProcessorStatus: null,
      payoutProcessorTxId: null,
    });
    expect(answer).not.toHaveProperty("request");
    expect(made.claimExpiresAt > new Date().toISOString()).toBe(true);
    const { claimUrl: _secret, ...shown } = made;
    expect((await expectCarriedByDeposit(held.id, made.id)).refund).toEqual(shown);
    expect(await hold()).toBe(0n);
    expectProblem(await resolve(held.id, "refund"), 409, "deposit_not_held");
    expectProblem(await resolve(held.id, "credit"), 409, "deposit_not_held");
    const page = await call(server.baseUrl, "GET", `${path}?lang=en`);
    expect(page.status).toBe(200);
    expect(page.text).toContain("9 USDT");
    const claimed = await claim(path);
    expect(claimed.status, claimed.text).toBe(200);
    // The payer's answer is the deposit's refund, not a refund request object.
    expect(claimed.body).toEqual({
      refund: { ...shown, status: "processing", toAddress: payer(chain, SENDER) },
    });
    expectProblem(await claim(path), 409, "refund_claim_closed");
    const payout = await admin(server, "GET", `/payouts/${made.id}`);
    expect(payout.status, payout.text).toBe(200);
    expect(payout.body).toMatchObject({ state: "queued", amount: "9" });
    const settled = await admin(server, "POST", `/payouts/${made.id}/outcome`, { status: "completed", txId: "0xfeed" });
    expect(settled.status, settled.text).toBe(200);
    const after = await expectCarriedByDeposit(held.id, made.id);
    expect(after).toMatchObject({ status: "refunded", refund: { status: "completed", payoutProcessorTxId: "0xfeed" } });
    expect(await hold()).toBe(0n);
    expect(await depositEvents(held.id, made.id)).toEqual(["deposit.refund_claimed", "deposit.refund_completed"]);
    await auditAndExpect(server);
  });

  it("an expired claim credits the hold back: the deposit is held again and the merchant decides anew", async () => {
    const held = await heldDeposit("20");
    const before = await hold();
    const { refund: made, path } = await refund(held.id);
    expect(await hold()).toBe(before - usdt("20"));
    // Not due yet: the worker leaves it.
    expect(await server.workers.loops.refundClaims?.runOnce()).toBe(0);
    await server.ctx.store.transaction((tx) =>
      tx.db
        .updateTable("refund_claims")
        .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
        .where("refund_id", "=", made.id)
        .execute(),
    );
    expectProblem(await claim(path), 410, "refund_claim_expired");
    expect(await server.workers.loops.refundClaims?.runOnce()).toBe(1);
    expect(await hold()).toBe(before);
    const after = await expectCarriedByDeposit(held.id, made.id);
    expect(after).toMatchObject({ status: "held", refund: { status: "expired", toAddress: null } });
    expect(await depositEvents(held.id, made.id)).toEqual(["deposit.refund_expired"]);
    await auditAndExpect(server);
    // Decided anew: credited from the hold with the fees of §4; the deposit still shows the refund that expired.
    const credited = await resolve(held.id, "credit");
    expect(credited.status, credited.text).toBe(200);
    expect(credited.body).toMatchObject({ status: "completed", creditedAmount: "18.8", refund: { status: "expired" } });
    expect(credited.body.refund).not.toHaveProperty("claimUrl");
    expect(await hold()).toBe(before - usdt("20"));
    expect(await depositEvents(held.id, made.id)).toEqual(["deposit.completed", "deposit.refund_expired"]);
    await auditAndExpect(server);
  });

  it("a failed payout credits the hold back: the deposit is held again and can be refunded anew", async () => {
    const held = await heldDeposit("30");
    const before = await hold();
    const first = await refund(held.id);
    expect((await claim(first.path)).status).toBe(200);
    const failed = await admin(server, "POST", `/payouts/${first.refund.id}/outcome`, { status: "failed" });
    expect(failed.status, failed.text).toBe(200);
    expect(await hold()).toBe(before);
    const after = await expectCarriedByDeposit(held.id, first.refund.id);
    expect(after).toMatchObject({ status: "held", refund: { status: "failed", toAddress: payer(chain, SENDER) } });
    expect(await depositEvents(held.id, first.refund.id)).toEqual(["deposit.refund_claimed", "deposit.refund_failed"]);
    await auditAndExpect(server);
    const second = await refund(held.id);
    expect(second.refund.id).not.toBe(first.refund.id);
    expect(second.refund.claimUrl).not.toBe(first.refund.claimUrl);
    // The deposit shows its latest refund; the one that failed is still no refund request object.
    expect((await expectCarriedByDeposit(held.id, second.refund.id)).refund.status).toBe("awaiting_claim");
    expectProblem(
      await merchant(server, shop.apiKey, "GET", `/public/v1/refunds/${first.refund.id}`),
      404,
      "refund_not_found",
    );
    expect(await hold()).toBe(before - usdt("30"));
    await auditAndExpect(server);
  });

  it("refuses a refund the network fee, raised since, takes all of; nothing changes", async () => {
    const held = await heldDeposit("5");
    const before = await hold();
    const raise = (networkFee: string) => admin(server, "PUT", "/currencies/USDT", usdtEntry(token, { networkFee }));
    expect((await raise("5")).status).toBe(200);
    try {
      expectProblem(await resolve(held.id, "refund"), 409, "deposit_fees_exceed_amount");
      expect(await depositById(held.id)).toMatchObject({ status: "held", refund: null });
      expect(await hold()).toBe(before);
      const refunds = await server.ctx.store.db
        .selectFrom("refunds")
        .select("request_id")
        .where("deposit_id", "=", held.id)
        .execute();
      expect(refunds).toEqual([]);
    } finally {
      expect((await raise("1")).status).toBe(200);
    }
    const { refund: made } = await refund(held.id);
    expect(made).toMatchObject({ amount: "4", networkFee: "1" });
    await auditAndExpect(server);
  });

  it("racing refund and credit calls move the deposit once: one 200, the others 409", async () => {
    const held = await heldDeposit("40");
    const before = await hold();
    const actions = ["refund", "credit", "refund", "credit", "refund", "credit"] as const;
    const answers = await Promise.all(actions.map((a) => resolve(held.id, a)));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409, 409, 409, 409, 409]);
    for (const lost of answers.filter((a) => a.status === 409)) expectProblem(lost, 409, "deposit_not_held");
    const won = answers.find((a) => a.status === 200) as (typeof answers)[number];
    const refunds = await server.ctx.store.db
      .selectFrom("refunds")
      .select("request_id")
      .where("deposit_id", "=", held.id)
      .execute();
    expect(refunds).toHaveLength(won.body.status === "refunded" ? 1 : 0);
    expect(await depositStatus(held.id)).toBe(won.body.status);
    expect(await hold()).toBe(before - usdt("40"));
    await auditAndExpect(server);
  });
});

// Last: the policy it sets holds every later payout of this merchant.
describe("a deposit's refund over the merchant's payout policy (product §31)", () => {
  it("waits for approval once claimed; rejected, the hold is credited back and the deposit held again; each step a deposit event", async () => {
    const held = await heldDeposit("50");
    const before = await hold();
    const policy = { perPayoutLimit: "20", dailyLimit: null, approvalsRequired: 1 };
    const set = await admin(server, "PUT", `/merchants/${shop.id}/payout-policies/USDT`, policy);
    expect(set.status, set.text).toBe(200);
    const approver = await invitedUser(server, shop.id, "approver");
    const { refund: made, path } = await refund(held.id);
    expect((await claim(path)).status).toBe(200);
    const waiting = await admin(server, "GET", `/payouts/${made.id}`);
    expect(waiting.body).toMatchObject({ state: "awaiting_approval", amount: "49" });
    expect((await expectCarriedByDeposit(held.id, made.id)).refund.status).toBe("processing");
    expect(await depositEvents(held.id, made.id)).toEqual([
      "deposit.refund_awaiting_approval",
      "deposit.refund_claimed",
    ]);
    expect((await approver.call("POST", "/step-up", { password: PASSWORD })).status).toBe(200);
    const rejected = await approver.call("POST", `/approvals/${made.id}/reject`);
    expect(rejected.status, rejected.text).toBe(200);
    expect(await hold()).toBe(before);
    const after = await expectCarriedByDeposit(held.id, made.id);
    expect(after).toMatchObject({ status: "held", refund: { status: "failed" } });
    expect(await depositEvents(held.id, made.id)).toEqual([
      "deposit.refund_awaiting_approval",
      "deposit.refund_claimed",
      "deposit.refund_failed",
      "deposit.refund_rejected",
    ]);
    await auditAndExpect(server);
  });
});
