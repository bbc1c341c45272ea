// The subscription worker on real time: due steps are taken once however many passes race, and a subscription on a test clock is left alone.
import { describe, expect, it } from "vitest";
import { runDueSubscriptions } from "../../src/app/subscriptionSchedule.ts";
import { useTestServer } from "../support/fixture.ts";
import { pay } from "../support/invoices.ts";
import { createMerchant, merchant } from "../support/server.ts";
import { signedCall } from "../support/signing.ts";

const server = useTestServer();
const DAY = 86_400_000;

async function paidWeeklySubscription() {
  const m = await createMerchant(server);
  const plan = await merchant(server, m.apiKey, "POST", "/public/v1/plans", {
    name: "Weekly",
    currency: "USDT",
    amount: "3",
    interval: "week",
  });
  const created = await signedCall(server.baseUrl, {
    apiKey: m.apiKey,
    secret: m.secretKey,
    path: "/public/v1/subscriptions",
    body: { planId: plan.body.id, customer: { reference: "w1" } },
  });
  expect(created.answer.status, created.answer.text).toBe(200);
  const paid = await pay(server, m.apiKey, created.answer.body.openInvoice.id);
  expect(paid.body.status).toBe("completed");
  return { m, id: created.answer.body.id as string };
}

/** Moves the subscription's current period so that it ended `endedDaysAgo` days ago, as time passing would. */
async function endPeriod(id: string, endedDaysAgo: number) {
  const end = new Date(Date.now() - endedDaysAgo * DAY).toISOString();
  const start = new Date(Date.now() - (endedDaysAgo + 7) * DAY).toISOString();
  await server.ctx.store.transaction((tx) =>
    tx.db
      .updateTable("subscriptions")
      .set({ current_period_start: start, current_period_end: end, anchor_at: start, run_at: start })
      .where("id", "=", id)
      .execute(),
  );
}

describe("the subscription worker", () => {
  it("takes each due step once when passes race", async () => {
    const { m, id } = await paidWeeklySubscription();
    await endPeriod(id, 0.5);
    const taken = await Promise.all([runDueSubscriptions(server.ctx), runDueSubscriptions(server.ctx)]);
    // The renewal invoice, then the period's start, unpaid: two steps between both passes.
    expect(taken[0]! + taken[1]!).toBe(2);
    const s = (await merchant(server, m.apiKey, "GET", `/public/v1/subscriptions/${id}`)).body;
    expect(s).toMatchObject({ status: "past_due", period: 2, openInvoice: { period: 2 } });
    const invoices = await merchant(server, m.apiKey, "GET", "/public/v1/invoices?limit=10");
    expect(invoices.body.data).toHaveLength(2);
    expect(await runDueSubscriptions(server.ctx)).toBe(0);
  });

  it("leaves a subscription on a test clock to its clock", async () => {
    const { m, id } = await paidWeeklySubscription();
    const advanced = await merchant(server, m.apiKey, "POST", `/sandbox/v1/subscriptions/${id}/advance`, {
      to: new Date(Date.now() + DAY).toISOString(),
    });
    expect(advanced.body.testClock).not.toBeNull();
    await endPeriod(id, 1);
    expect(await runDueSubscriptions(server.ctx)).toBe(0);
    const s = (await merchant(server, m.apiKey, "GET", `/public/v1/subscriptions/${id}`)).body;
    expect(s).toMatchObject({ status: "active", period: 1 });
  });
});
