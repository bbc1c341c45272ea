// Payout policies and approvals (product §31) on both stores: a payout over its limit waits, its initiator cannot approve it, parallel approvals send it once, a rejection credits it back once, and the rolling 24-hour sum holds under 20 parallel requests.
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { type DashboardClient, invitedUser, PASSWORD } from "../support/dashboard.ts";
import { useTestServer } from "../support/fixture.ts";
import { completedInvoice, invoiceStatus, refundCrypto } from "../support/refunds.ts";
import { admin, call, expectProblem } from "../support/server.ts";
import { signedCall } from "../support/signing.ts";
import {
  balanceOf,
  expectLedgerBalanced,
  type FundedMerchant,
  fundedMerchant,
  movementCount,
  payoutWorker,
  withdraw,
} from "../support/withdrawals.ts";

// A loosening in the dashboard waits an hour; the operator's changes apply at once.
const server = useTestServer({ env: { WITHDRAWAL_METHOD_COOLING_OFF_MINUTES: "60" } });

async function stepUp(user: DashboardClient): Promise<void> {
  expect((await user.call("POST", "/step-up", { password: PASSWORD })).status).toBe(200);
}

async function setPolicy(merchantId: string, body: Record<string, unknown>): Promise<void> {
  const set = await admin(server, "PUT", `/merchants/${merchantId}/payout-policies/USDT`, body);
  expect(set.status, set.text).toBe(200);
}

async function payoutState(requestId: string): Promise<string | undefined> {
  const row = await server.ctx.store.db
    .selectFrom("payouts")
    .select("state")
    .where("request_id", "=", requestId.toLowerCase())
    .executeTakeFirst();
  return row?.state;
}

async function eventTypes(subjectId: string): Promise<string[]> {
  const rows = await server.ctx.store.db
    .selectFrom("events")
    .select("type")
    .where("subject_id", "=", subjectId.toLowerCase())
    .orderBy("created_at")
    .orderBy("id")
    .execute();
  return rows.map((r) => r.type);
}

/** A merchant with 1000 USDT, its owner (who withdraws in the dashboard) and two approvers. */
async function team(policy: Record<string, unknown>) {
  const shop = await fundedMerchant(server, "1000");
  await setPolicy(shop.id, policy);
  const owner = await invitedUser(server, shop.id, "owner");
  const first = await invitedUser(server, shop.id, "approver");
  const second = await invitedUser(server, shop.id, "approver");
  return { shop, owner, first, second };
}

async function dashboardWithdraw(owner: DashboardClient, shop: FundedMerchant, amount: string) {
  const requestId = randomUUID();
  const made = await owner.call("POST", "/withdrawals", {
    requestId,
    currency: "USDT",
    amount,
    withdrawalMethodId: shop.methodId,
  });
  expect(made.status, made.text).toBe(200);
  return { requestId, body: made.body };
}

describe("payout approvals", () => {
  let shop: FundedMerchant;
  let owner: DashboardClient;
  let first: DashboardClient;
  let second: DashboardClient;
  beforeAll(async () => {
    ({ shop, owner, first, second } = await team({ perPayoutLimit: "100", dailyLimit: null, approvalsRequired: 2 }));
  });

  it("holds a withdrawal over the limit, debited and never handed to a rail; its initiator cannot approve it", async () => {
    const { requestId, body } = await dashboardWithdraw(owner, shop, "150");
    expect(body.request).toMatchObject({ status: "processing", payout_processor_status: "awaiting_approval" });
    expect(await balanceOf(server, shop.id)).toBe("850");
    expect(await movementCount(server, requestId.toLowerCase(), "approval_hold")).toBe(1);
    await payoutWorker(server).runOnce();
    expect(await payoutState(requestId)).toBe("awaiting_approval");
    // The operator cannot settle it past its approvers either.
    const settle = await admin(server, "POST", `/payouts/${requestId}/outcome`, { status: "completed" });
    expectProblem(settle, 409, "payout_awaiting_approval");
    // An owner is an approver too, but never of a payout it made.
    await stepUp(owner);
    expectProblem(await owner.call("POST", `/approvals/${requestId}/approve`), 403, "initiator_cannot_approve");
    const viewer = await invitedUser(server, shop.id, "viewer");
    expectProblem(await viewer.call("POST", `/approvals/${requestId}/approve`), 403, "role_forbidden");
    expectProblem(
      await first.call("POST", `/approvals/${requestId}/approve`, undefined, { csrf: null }),
      403,
      "csrf_failed",
    );
    const queue = await first.call("GET", "/approvals");
    expect(queue.body).toEqual([
      expect.objectContaining({
        requestId: requestId.toLowerCase(),
        amount: "150",
        state: "pending",
        initiatorUserId: owner.userId,
      }),
    ]);
    expect(await eventTypes(requestId)).toEqual(["withdrawal.awaiting_approval"]);
  });

  it("is sent once when two approvers click approve in parallel, each more than once", async () => {
    const { requestId } = await dashboardWithdraw(owner, shop, "120");
    const clicks = [first, second, first, second].map((user) => user.call("POST", `/approvals/${requestId}/approve`));
    const answers = await Promise.all(clicks);
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([200, 200, 409, 409]);
    expect(await payoutState(requestId)).toBe("queued");
    expect(await movementCount(server, requestId.toLowerCase(), "approval_release")).toBe(1);
    await payoutWorker(server).runOnce();
    expect(await payoutState(requestId)).toBe("sent");
    expect(await eventTypes(requestId)).toEqual(["withdrawal.awaiting_approval", "withdrawal.approved"]);
    const audit = await owner.call("GET", "/audit");
    expect(audit.body.items.filter((i: { action: string }) => i.action === "payout.approve")).toHaveLength(2);
    await expectLedgerBalanced(server);
  });

  it("is credited back once when rejected, however many approvers reject in parallel", async () => {
    const before = await balanceOf(server, shop.id);
    const { requestId } = await dashboardWithdraw(owner, shop, "130");
    expect(await balanceOf(server, shop.id)).toBe(String(Number(before) - 130));
    const answers = await Promise.all(
      [first, second, first].map((user) => user.call("POST", `/approvals/${requestId}/reject`)),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409, 409]);
    expect(await payoutState(requestId)).toBe("failed");
    expect(await balanceOf(server, shop.id)).toBe(before);
    expect(await movementCount(server, requestId.toLowerCase(), "reversal")).toBe(1);
    // The rejection and the settlement it makes are one transaction: one time, in no defined order.
    expect((await eventTypes(requestId)).sort()).toEqual([
      "withdrawal.awaiting_approval",
      "withdrawal.failed",
      "withdrawal.rejected",
    ]);
    const list = await owner.call("GET", "/withdrawals");
    expect(list.body.data.find((w: { id: string }) => w.id === requestId)).toMatchObject({
      status: "failed",
      payoutProcessorStatus: "rejected_by_approver",
    });
    expectProblem(await second.call("POST", `/approvals/${requestId}/approve`), 409, "approval_closed");
    await expectLedgerBalanced(server);
  });

  it("lets any approver approve a payout made with an API key, and tightens at once but loosens after the cooling-off", async () => {
    const made = await withdraw(server, shop, { amount: "101" });
    expect(made.answer.status).toBe(200);
    expect(made.answer.body.request.payout_processor_status).toBe("awaiting_approval");
    await stepUp(owner);
    const policy = (body: Record<string, unknown>) => owner.call("PUT", "/payout-policies/USDT", body);
    const tighter = await policy({ perPayoutLimit: "50", dailyLimit: null, approvalsRequired: 2 });
    expect(tighter.body).toMatchObject({ perPayoutLimit: "50", approvalsRequired: 2, pending: null });
    const looser = await policy({ perPayoutLimit: "500", dailyLimit: null, approvalsRequired: 1 });
    expect(looser.body).toMatchObject({ perPayoutLimit: "50", approvalsRequired: 2 });
    expect(looser.body.pending).toMatchObject({ perPayoutLimit: "500", approvalsRequired: 1 });
    expectProblem(
      await first.call("PUT", "/payout-policies/USDT", {
        perPayoutLimit: null,
        dailyLimit: null,
        approvalsRequired: 0,
      }),
      403,
      "role_forbidden",
    );
    const audit = await owner.call("GET", "/audit");
    expect(audit.body.items.filter((i: { action: string }) => i.action === "payout_policy.set")).toHaveLength(2);
    await setPolicy(shop.id, { perPayoutLimit: "100", dailyLimit: null, approvalsRequired: 2 });
  });
});

describe("the rolling 24-hour sum", () => {
  it("sends at most the daily limit's worth without approval under 20 parallel requests", async () => {
    const shop = await fundedMerchant(server, "1000");
    await setPolicy(shop.id, { perPayoutLimit: null, dailyLimit: "200", approvalsRequired: 1 });
    const answers = await Promise.all(Array.from({ length: 20 }, () => withdraw(server, shop, { amount: "19" })));
    expect(answers.map((a) => a.answer.status)).toEqual(Array(20).fill(200));
    const statuses = answers.map((a) => a.answer.body.request.payout_processor_status);
    // 10 × 19 = 190 fit under 200; the 11th would make 209.
    expect(statuses.filter((s) => s === null)).toHaveLength(10);
    expect(statuses.filter((s) => s === "awaiting_approval")).toHaveLength(10);
    expect(await balanceOf(server, shop.id)).toBe("620");
    await expectLedgerBalanced(server);
  });

  it("holds a refund over the limit like a withdrawal: approved, it goes; rejected, the invoice is completed again", async () => {
    const crew = await team({ perPayoutLimit: "100", dailyLimit: null, approvalsRequired: 1 });
    const refundOf = async (amount: string, address: string) => {
      const paid = await completedInvoice(server, crew.shop, { currency: "USDT", amount });
      const refund = await refundCrypto(server, crew.shop, { invoiceId: paid.id, address });
      expect(refund.answer.status, refund.answer.text).toBe(200);
      expect(refund.answer.body.request).toMatchObject({ payout_processor_status: "awaiting_approval" });
      expect(await payoutState(refund.requestId)).toBe("awaiting_approval");
      return { invoiceId: paid.id as string, requestId: refund.requestId };
    };
    const approved = await refundOf("300", "0xrefundapproved");
    await payoutWorker(server).runOnce();
    expect(await payoutState(approved.requestId)).toBe("awaiting_approval");
    await stepUp(crew.first);
    const yes = await crew.first.call("POST", `/approvals/${approved.requestId}/approve`);
    expect(yes.status, yes.text).toBe(200);
    expect(await payoutState(approved.requestId)).toBe("queued");
    expect(await eventTypes(approved.requestId)).toEqual(["refund.awaiting_approval", "refund.approved"]);

    const rejected = await refundOf("200", "0xrefundrejected");
    const balance = await balanceOf(server, crew.shop.id);
    await stepUp(crew.second);
    const no = await crew.second.call("POST", `/approvals/${rejected.requestId}/reject`);
    expect(no.status, no.text).toBe(200);
    expect(await payoutState(rejected.requestId)).toBe("failed");
    expect(await movementCount(server, rejected.requestId.toLowerCase(), "reversal")).toBe(1);
    expect(Number(await balanceOf(server, crew.shop.id))).toBeGreaterThan(Number(balance));
    expect(await invoiceStatus(server, crew.shop, rejected.invoiceId)).toBe("completed");
    await expectLedgerBalanced(server);
  });

  it("holds a refund claim's payout over the limit once the payer claims it, until an approver approves", async () => {
    const crew = await team({ perPayoutLimit: "20", dailyLimit: null, approvalsRequired: 1 });
    const paid = await completedInvoice(server, crew.shop, { currency: "USDT", amount: "100" });
    const made = await signedCall(server.baseUrl, {
      apiKey: crew.shop.apiKey,
      secret: crew.shop.secretKey,
      path: "/public/v1/refunds/create",
      body: { invoiceId: paid.id, type: "crypto", amount: "30", claim: true },
    });
    expect(made.answer.status, made.answer.text).toBe(200);
    expect(await payoutState(made.requestId)).toBeUndefined();
    const claimPath = new URL(made.answer.body.claimUrl).pathname;
    const claimed = await call(server.baseUrl, "POST", claimPath, {
      body: { address: "0x70997970c51812dc3a010c7d01b50e0d17dc79c8" },
    });
    expect(claimed.status, claimed.text).toBe(200);
    expect(await payoutState(made.requestId)).toBe("awaiting_approval");
    await payoutWorker(server).runOnce();
    expect(await payoutState(made.requestId)).toBe("awaiting_approval");
    await stepUp(crew.first);
    const yes = await crew.first.call("POST", `/approvals/${made.requestId}/approve`);
    expect(yes.status, yes.text).toBe(200);
    expect(await payoutState(made.requestId)).toBe("queued");
    await expectLedgerBalanced(server);
  });
});
