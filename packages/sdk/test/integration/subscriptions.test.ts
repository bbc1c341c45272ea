// The SDK's plans and subscriptions (product §29) against the real service (SQLite and PostgreSQL): plans, a signed subscription, its test clock, plan change, cancellation and its typed events.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pay } from "../../../../test/support/invoices.ts";
import { createMerchant, startTestServer, type TestServer } from "../../../../test/support/server.ts";
import { PaymentsApiError, PaymentsClient, type PaymentsEvent, type Subscription } from "../../src/index.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

const DAY = 86_400_000;

async function all<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

async function refusal(work: Promise<unknown>): Promise<PaymentsApiError> {
  const error = await work.catch((e: unknown) => e);
  expect(error).toBeInstanceOf(PaymentsApiError);
  return error as PaymentsApiError;
}

describe("PaymentsClient, plans and subscriptions", () => {
  it("creates, lists, reads, retires and reactivates plans", async () => {
    const m = await createMerchant(server);
    const client = new PaymentsClient({ baseUrl: server.baseUrl, apiKey: m.apiKey, secretKey: m.secretKey });
    const monthly = await client.createPlan({ name: "Pro", currency: "USDT", amount: "10", interval: "month" });
    const weekly = await client.createPlan({
      name: "Weekly",
      currency: "USDT",
      amount: "3",
      interval: "week",
      intervalCount: 2,
      trialDays: 7,
    });
    expect(weekly).toMatchObject({ intervalCount: 2, trialDays: 7, graceDays: 3, active: true });
    expect(await client.getPlan(monthly.id)).toEqual(monthly);
    expect((await all(client.listPlans({ limit: 1 }))).map((p) => p.id)).toEqual([weekly.id, monthly.id]);
    const retired = await client.updatePlan(monthly.id, { active: false });
    expect(retired.active).toBe(false);
    const refused = await refusal(client.createSubscription({ planId: monthly.id, customer: { reference: "c" } }));
    expect([refused.status, refused.code]).toEqual([400, "plan_retired"]);
    expect((await client.updatePlan(monthly.id, { active: true })).active).toBe(true);
    const invalid = await refusal(client.createPlan({ name: "x", currency: "NOPE", amount: "1", interval: "day" }));
    expect(invalid.code).toBe("unknown_currency");
  });

  it("subscribes (signed, replayed), advances the test clock, changes plan, cancels, and types the events", async () => {
    const m = await createMerchant(server);
    const client = new PaymentsClient({ baseUrl: server.baseUrl, apiKey: m.apiKey, secretKey: m.secretKey });
    const plan = await client.createPlan({ name: "Pro", currency: "USDT", amount: "10", interval: "month" });
    const bigger = await client.createPlan({ name: "Team", currency: "USDT", amount: "25", interval: "month" });
    const requestId = crypto.randomUUID();
    const params = { planId: plan.id, customer: { reference: "cust-1", email: "c@example.com" } };
    const created = await client.createSubscription(params, { requestId });
    expect(created).toMatchObject({ status: "incomplete", period: 1, openInvoice: { period: 1, amount: "10" } });
    expect(await client.createSubscription(params, { requestId })).toEqual(created);
    expect(await client.getSubscription(created.id)).toEqual(created);
    const listed = await all(client.listSubscriptions({ status: "incomplete", customer: "cust-1" }));
    expect(listed.map((s) => s.id)).toEqual([created.id]);
    expect(await all(client.listSubscriptions({ planId: bigger.id }))).toEqual([]);

    expect((await pay(server, m.apiKey, created.openInvoice?.id as string)).status).toBe(200);
    const changed = await client.changeSubscriptionPlan(created.id, { planId: bigger.id });
    expect(changed).toMatchObject({ status: "active", planId: plan.id, nextPlanId: bigger.id });
    const to = new Date(Date.parse(changed.currentPeriodEnd) - DAY).toISOString();
    const advanced: Subscription = await client.advanceSubscription(created.id, { to });
    expect(advanced).toMatchObject({ testClock: to, openInvoice: { period: 2, amount: "25" } });
    expect(await client.advanceSubscription(created.id, { to })).toEqual(advanced);

    const later = await client.cancelSubscription(created.id, { atPeriodEnd: true });
    expect(later).toMatchObject({ status: "active", cancelAtPeriodEnd: true, openInvoice: null });
    const now = await client.cancelSubscription(created.id);
    expect(now.status).toBe("canceled");

    // The event union narrows on type: a subscription event's data is the subscription.
    const events: PaymentsEvent[] = await all(client.listEvents({ type: "subscription.canceled" }));
    const [canceled] = events;
    if (canceled?.type !== "subscription.canceled") throw new Error("no subscription.canceled event");
    expect(canceled.data.subscription).toMatchObject({ id: created.id, status: "canceled" });
    const other = await createMerchant(server);
    const missing = await refusal(
      new PaymentsClient({ baseUrl: server.baseUrl, apiKey: other.apiKey }).getSubscription(created.id),
    );
    expect([missing.status, missing.code]).toEqual([404, "subscription_not_found"]);
  });
});
