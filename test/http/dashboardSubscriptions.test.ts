// The dashboard's plans and subscriptions (product §29) on both stores: list, create and retire plans, list and cancel subscriptions; roles, CSRF, another merchant's objects, audit rows.
import { beforeAll, describe, expect, it } from "vitest";
import { type DashboardClient, invitedUser } from "../support/dashboard.ts";
import { useTestServer } from "../support/fixture.ts";
import { createMerchant, expectProblem } from "../support/server.ts";
import { signedCall } from "../support/signing.ts";

type Merchant = Awaited<ReturnType<typeof createMerchant>>;

let shop: Merchant;
let owner: DashboardClient;
let developer: DashboardClient;
let viewer: DashboardClient;
let stranger: DashboardClient;

const server = useTestServer();
beforeAll(async () => {
  shop = await createMerchant(server);
  const other = await createMerchant(server);
  owner = await invitedUser(server, shop.id, "owner");
  developer = await invitedUser(server, shop.id, "developer");
  viewer = await invitedUser(server, shop.id, "viewer");
  stranger = await invitedUser(server, other.id, "owner");
});

async function auditOf(client: DashboardClient): Promise<{ action: string; target: string | null }[]> {
  const log = await client.call("GET", "/audit?limit=100");
  expect(log.status).toBe(200);
  return log.body.items;
}

async function subscribe(planId: string, reference: string) {
  const { answer } = await signedCall(server.baseUrl, {
    apiKey: shop.apiKey,
    secret: shop.secretKey,
    path: "/public/v1/subscriptions",
    body: { planId, customer: { reference } },
  });
  expect(answer.status, answer.text).toBe(200);
  return answer.body;
}

const planBody = { name: "Pro", currency: "USDT", amount: "12.5", interval: "month", trialDays: 7 };

describe("dashboard plans", () => {
  it("lists, creates and retires plans; viewers read only; another merchant's is 404; audited", async () => {
    const made = await developer.call("POST", "/plans", planBody);
    expect(made.status, made.text).toBe(200);
    expect(made.body).toMatchObject({ ...planBody, intervalCount: 1, graceDays: 3, active: true });
    const listed = await viewer.call("GET", "/plans?limit=100");
    expect(listed.body.data).toContainEqual(made.body);
    expect((await stranger.call("GET", "/plans")).body.data).toEqual([]);

    expectProblem(await viewer.call("POST", "/plans", planBody), 403, "role_forbidden");
    expectProblem(await owner.call("POST", "/plans", planBody, { csrf: null }), 403, "csrf_failed");
    expectProblem(await owner.call("POST", "/plans", { ...planBody, currency: "NOPE" }), 400, "unknown_currency");
    expectProblem(await owner.call("POST", "/plans", { ...planBody, trialDays: 731 }), 400, "validation_failed");

    const path = `/plans/${made.body.id}`;
    expectProblem(await viewer.call("PATCH", path, { active: false }), 403, "role_forbidden");
    expectProblem(await stranger.call("PATCH", path, { active: false }), 404, "plan_not_found");
    const retired = await owner.call("PATCH", path, { active: false });
    expect(retired.body).toMatchObject({ id: made.body.id, active: false });
    expect(await auditOf(owner)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ action: "plan.create", target: made.body.id }),
        expect.objectContaining({ action: "plan.retire", target: made.body.id }),
      ]),
    );
  });
});

describe("dashboard subscriptions", () => {
  it("lists by status and cancels at the period's end or now; viewers read only; another merchant's is 404; audited", async () => {
    const plan = (await owner.call("POST", "/plans", { ...planBody, trialDays: 0 })).body;
    const first = await subscribe(plan.id, "cust-a");
    const second = await subscribe(plan.id, "cust-b");
    expect(first).toMatchObject({ status: "incomplete", openInvoice: { period: 1, amount: "12.5" } });

    const listed = await viewer.call("GET", "/subscriptions?status=incomplete&limit=100");
    expect(listed.body.data.map((s: { id: string }) => s.id)).toEqual([second.id, first.id]);
    expect(listed.body.data[1]).toEqual(first);
    const byCustomer = await viewer.call("GET", "/subscriptions?customer=cust-a");
    expect(byCustomer.body.data.map((s: { id: string }) => s.id)).toEqual([first.id]);
    expectProblem(await viewer.call("GET", "/subscriptions?status=gone"), 400, "validation_failed");
    expect((await stranger.call("GET", "/subscriptions")).body.data).toEqual([]);

    const cancel = (id: string) => `/subscriptions/${id}/cancel`;
    expectProblem(await viewer.call("POST", cancel(first.id), { atPeriodEnd: false }), 403, "role_forbidden");
    expectProblem(
      await owner.call("POST", cancel(first.id), { atPeriodEnd: false }, { csrf: "wrong" }),
      403,
      "csrf_failed",
    );
    expectProblem(await stranger.call("POST", cancel(first.id), { atPeriodEnd: false }), 404, "subscription_not_found");
    const later = await developer.call("POST", cancel(first.id), { atPeriodEnd: true });
    expect(later.body).toMatchObject({ id: first.id, status: "incomplete", cancelAtPeriodEnd: true });
    const now = await owner.call("POST", cancel(second.id), { atPeriodEnd: false });
    expect(now.body).toMatchObject({ id: second.id, status: "canceled", openInvoice: null });
    const invoice = await owner.call("GET", `/invoices/${second.openInvoice.id}`);
    expect(invoice.body.invoice.status).toBe("expired");

    const canceled = await viewer.call("GET", "/subscriptions?status=canceled");
    expect(canceled.body.data.map((s: { id: string }) => s.id)).toEqual([second.id]);
    expect(await auditOf(owner)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ action: "subscription.cancel_at_period_end", target: first.id }),
        expect.objectContaining({ action: "subscription.cancel", target: second.id }),
      ]),
    );
  });
});
