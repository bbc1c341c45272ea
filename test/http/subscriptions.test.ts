// Subscriptions (product §29) through the real server on the sandbox: plans, a subscription's whole life on a test clock, cancellation, plan changes, and racing schedules making one invoice per period.
import { describe, expect, it } from "vitest";
import { useTestServer } from "../support/fixture.ts";
import { expectHealthyLedger, pay } from "../support/invoices.ts";
import { createMerchant, expectProblem, merchant, type TestServer } from "../support/server.ts";
import { signedCall } from "../support/signing.ts";

const server = useTestServer();
const DAY = 86_400_000;

type Merchant = Awaited<ReturnType<typeof createMerchant>>;

const sorted = (events: string[]) => [...events].sort();

async function createPlan(m: Merchant, fields: Record<string, unknown> = {}) {
  const answer = await merchant(server, m.apiKey, "POST", "/public/v1/plans", {
    name: "Pro",
    currency: "USDT",
    amount: "10",
    interval: "month",
    ...fields,
  });
  expect(answer.status, answer.text).toBe(200);
  return answer.body;
}

async function subscribe(s: TestServer, m: Merchant, body: Record<string, unknown>, requestId?: string) {
  const call = await signedCall(s.baseUrl, {
    apiKey: m.apiKey,
    secret: m.secretKey,
    path: "/public/v1/subscriptions",
    body,
    ...(requestId ? { requestId } : {}),
  });
  return call.answer;
}

function advance(m: Merchant, id: string, toMs: number) {
  return merchant(server, m.apiKey, "POST", `/sandbox/v1/subscriptions/${id}/advance`, {
    to: new Date(toMs).toISOString(),
  });
}

async function advanced(m: Merchant, id: string, toMs: number) {
  const answer = await advance(m, id, toMs);
  expect(answer.status, answer.text).toBe(200);
  return answer.body;
}

async function payOpen(m: Merchant, subscription: { openInvoice: { id: string } | null }) {
  expect(subscription.openInvoice).not.toBeNull();
  const paid = await pay(server, m.apiKey, subscription.openInvoice?.id as string);
  expect(paid.status, paid.text).toBe(200);
  expect(paid.body.status).toBe("completed");
}

/**
 * The events of one subscription as `type:period`, sorted: each must appear exactly as often as
 * listed (events of one millisecond have no order among them in the list).
 */
async function eventsOf(m: Merchant, id: string) {
  const answer = await merchant(server, m.apiKey, "GET", "/public/v1/events?limit=100");
  const events = (answer.body.data as { type: string; data: { subscription?: { id: string; period: number } } }[])
    .filter((e) => e.data.subscription?.id === id)
    .map((e) => `${e.type}:${e.data.subscription?.period}`);
  return events.sort();
}

describe("plans", () => {
  it("creates, reads, lists, retires and refuses bad plans", async () => {
    const m = await createMerchant(server);
    const plan = await createPlan(m, { trialDays: 7 });
    expect(plan).toMatchObject({
      name: "Pro",
      currency: "USDT",
      amount: "10",
      interval: "month",
      intervalCount: 1,
      trialDays: 7,
      graceDays: 3,
      renewalNoticeDays: 3,
      active: true,
    });
    const read = await merchant(server, m.apiKey, "GET", `/public/v1/plans/${plan.id}`);
    expect(read.body).toEqual(plan);
    const second = await createPlan(m, { interval: "week", intervalCount: 2 });
    const list = await merchant(server, m.apiKey, "GET", "/public/v1/plans?limit=1");
    expect(list.body).toEqual({ data: [second], has_more: true });
    const other = await createMerchant(server);
    expectProblem(await merchant(server, other.apiKey, "GET", `/public/v1/plans/${plan.id}`), 404, "plan_not_found");
    const retired = await merchant(server, m.apiKey, "PATCH", `/public/v1/plans/${plan.id}`, { active: false });
    expect(retired.body.active).toBe(false);
    const refused = await subscribe(server, m, { planId: plan.id, customer: { reference: "c1" } });
    expectProblem(refused, 400, "plan_retired");
    expectProblem(await subscribe(server, m, { planId: "nope", customer: { reference: "c1" } }), 400, "unknown_plan");
    const bad: [Record<string, unknown>, number, string][] = [
      [{ interval: "month", intervalCount: 13 }, 400, "plan_interval_invalid"],
      [{ graceDays: 15 }, 400, "validation_failed"],
      [{ currency: "NOPE" }, 400, "unknown_currency"],
      [{ amount: "-1" }, 400, "amount_not_positive"],
      [{ interval: "fortnight" }, 400, "validation_failed"],
    ];
    for (const [fields, status, code] of bad) {
      const answer = await merchant(server, m.apiKey, "POST", "/public/v1/plans", {
        name: "x",
        currency: "USDT",
        amount: "1",
        interval: "month",
        ...fields,
      });
      expectProblem(answer, status, code);
    }
  });
});

describe("a subscription's life on a test clock", () => {
  it("trial, three paid periods, one paid late in grace, one unpaid, each event once", async () => {
    const m = await createMerchant(server);
    const plan = await createPlan(m, { trialDays: 7 });
    const requestId = crypto.randomUUID();
    const body = { planId: plan.id, customer: { reference: "cust-1", email: "c@example.com" } };
    const created = await subscribe(server, m, body, requestId);
    expect(created.status, created.text).toBe(200);
    const sub = created.body;
    expect(sub).toMatchObject({ status: "trialing", period: 0, openInvoice: null, cancelAtPeriodEnd: false });
    // A retry of the signed request answers the same bytes, and makes nothing new.
    const retried = await subscribe(server, m, body, requestId);
    expect(retried.text).toBe(created.text);
    const trialEnd = Date.parse(sub.trialEnd);
    expect(trialEnd - Date.parse(sub.createdAt)).toBe(7 * DAY);

    // Three days before the trial ends: the first period's invoice.
    let s = await advanced(m, sub.id, trialEnd - 3 * DAY);
    expect(s).toMatchObject({ status: "trialing", openInvoice: { period: 1, amount: "10", currency: "USDT" } });
    await payOpen(m, s);
    for (let period = 1; period <= 3; period++) {
      s = await advanced(m, sub.id, Date.parse(s.currentPeriodEnd) + 1000);
      expect(s).toMatchObject({ status: "active", period });
      s = await advanced(m, sub.id, Date.parse(s.currentPeriodEnd) - 2 * DAY);
      expect(s.openInvoice.period).toBe(period + 1);
      if (period < 3) await payOpen(m, s);
    }
    // Period 4 unpaid at its start: past_due; paid a day later, inside the grace.
    s = await advanced(m, sub.id, Date.parse(s.currentPeriodEnd) + 1000);
    expect(s).toMatchObject({ status: "past_due", period: 4 });
    s = await advanced(m, sub.id, Date.parse(s.currentPeriodStart) + DAY);
    await payOpen(m, s);
    s = (await merchant(server, m.apiKey, "GET", `/public/v1/subscriptions/${sub.id}`)).body;
    expect(s).toMatchObject({ status: "active", period: 4, openInvoice: null });
    // Period 5 never paid: past_due, then unpaid once the grace ends, its invoice expired.
    s = await advanced(m, sub.id, Date.parse(s.currentPeriodEnd) - 2 * DAY);
    const lastInvoice = s.openInvoice.id;
    s = await advanced(m, sub.id, Date.parse(s.currentPeriodEnd) + 4 * DAY);
    expect(s).toMatchObject({ status: "unpaid", period: 5, openInvoice: null });
    const expired = await merchant(server, m.apiKey, "GET", `/public/v1/invoices/${lastInvoice}`);
    expect(expired.body.status).toBe("expired");
    // Calendar months from the anchor: each period starts on the trial end's day of the month.
    expect(new Date(s.currentPeriodStart).getUTCDate()).toBe(
      Math.min(new Date(trialEnd).getUTCDate(), new Date(s.currentPeriodStart).getUTCDate()),
    );
    expect(await eventsOf(m, sub.id)).toEqual(
      sorted([
        "subscription.invoice_created:0",
        "subscription.renewed:0",
        "subscription.invoice_created:1",
        "subscription.renewed:1",
        "subscription.invoice_created:2",
        "subscription.renewed:2",
        "subscription.invoice_created:3",
        "subscription.past_due:4",
        "subscription.renewed:4",
        "subscription.invoice_created:4",
        "subscription.past_due:5",
        "subscription.unpaid:5",
      ]),
    );
    await expectHealthyLedger(server);
  });

  it("starts incomplete without a trial, and cancels at the period's end", async () => {
    const m = await createMerchant(server);
    const plan = await createPlan(m, { interval: "week" });
    const created = await subscribe(server, m, { planId: plan.id, customer: { reference: "cust-2" } });
    expect(created.body).toMatchObject({ status: "incomplete", period: 1, openInvoice: { period: 1, amount: "10" } });
    await payOpen(m, created.body);
    const id = created.body.id;
    let s = (await merchant(server, m.apiKey, "GET", `/public/v1/subscriptions/${id}`)).body;
    expect(s.status).toBe("active");
    s = await advanced(m, id, Date.parse(s.currentPeriodEnd) - DAY);
    const renewal = s.openInvoice.id;
    const cancel = await merchant(server, m.apiKey, "POST", `/public/v1/subscriptions/${id}/cancel`, {
      atPeriodEnd: true,
    });
    expect(cancel.body).toMatchObject({ status: "active", cancelAtPeriodEnd: true, openInvoice: null });
    expect((await merchant(server, m.apiKey, "GET", `/public/v1/invoices/${renewal}`)).body.status).toBe("expired");
    s = await advanced(m, id, Date.parse(s.currentPeriodEnd) + 1000);
    expect(s.status).toBe("canceled");
    expect(await eventsOf(m, id)).toEqual(
      sorted([
        "subscription.invoice_created:1",
        "subscription.renewed:1",
        "subscription.invoice_created:1",
        "subscription.canceled:1",
      ]),
    );
    expectProblem(
      await merchant(server, m.apiKey, "POST", `/public/v1/subscriptions/${id}/change-plan`, { planId: plan.id }),
      409,
      "subscription_ended",
    );
  });

  it("changes plan from the next period and cancels now", async () => {
    const m = await createMerchant(server);
    const monthly = await createPlan(m);
    const yearly = await createPlan(m, { name: "Yearly", interval: "year", amount: "100" });
    const created = await subscribe(server, m, { planId: monthly.id, customer: { reference: "cust-3" } });
    await payOpen(m, created.body);
    const id = created.body.id;
    const changed = await merchant(server, m.apiKey, "POST", `/public/v1/subscriptions/${id}/change-plan`, {
      planId: yearly.id,
    });
    expect(changed.body).toMatchObject({ planId: monthly.id, nextPlanId: yearly.id });
    let s = await advanced(m, id, Date.parse(changed.body.currentPeriodEnd) - DAY);
    expect(s.openInvoice).toMatchObject({ period: 2, amount: "100" });
    await payOpen(m, s);
    s = await advanced(m, id, Date.parse(s.currentPeriodEnd) + 1000);
    expect(s).toMatchObject({ status: "active", period: 2, planId: yearly.id, nextPlanId: null });
    expect(Date.parse(s.currentPeriodEnd) - Date.parse(s.currentPeriodStart)).toBeGreaterThanOrEqual(365 * DAY);
    expectProblem(await advance(m, id, Date.parse(s.currentPeriodStart) - DAY), 400, "test_clock_invalid");
    const canceled = await merchant(server, m.apiKey, "POST", `/public/v1/subscriptions/${id}/cancel`, {});
    expect(canceled.body).toMatchObject({ status: "canceled" });
    const again = await merchant(server, m.apiKey, "POST", `/public/v1/subscriptions/${id}/cancel`, {});
    expect(again.body).toEqual(canceled.body);
    const list = await merchant(server, m.apiKey, "GET", `/public/v1/subscriptions?status=canceled&customer=cust-3`);
    expect(list.body.data.map((x: { id: string }) => x.id)).toEqual([id]);
    const other = await createMerchant(server);
    expectProblem(
      await merchant(server, other.apiKey, "GET", `/public/v1/subscriptions/${id}`),
      404,
      "subscription_not_found",
    );
  });

  it("two schedules racing over one subscription make one invoice per period", async () => {
    const m = await createMerchant(server);
    const plan = await createPlan(m, { interval: "day", renewalNoticeDays: 0, graceDays: 14 });
    const created = await subscribe(server, m, { planId: plan.id, customer: { reference: "cust-4" } });
    const id = created.body.id;
    await payOpen(m, created.body);
    const to = Date.parse(created.body.currentPeriodEnd) + 5 * DAY;
    const answers = await Promise.all([advance(m, id, to), advance(m, id, to), advance(m, id, to)]);
    for (const answer of answers) expect(answer.status, answer.text).toBe(200);
    const events = await eventsOf(m, id);
    // Period 1 paid; period 2 invoiced at its start, unpaid: past_due, and nothing more is made.
    expect(events).toEqual(
      sorted([
        "subscription.invoice_created:1",
        "subscription.renewed:1",
        "subscription.invoice_created:1",
        "subscription.past_due:2",
      ]),
    );
    const invoices = await merchant(server, m.apiKey, "GET", "/public/v1/invoices?limit=100");
    expect(invoices.body.data).toHaveLength(2);
  });
});
