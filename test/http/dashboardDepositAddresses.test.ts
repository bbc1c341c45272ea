// The dashboard's customers' deposit addresses (product §30) on both stores, a live service on a local chain: list (by customer), create (the same address again, audited once), deactivate and activate (audited), an address's deposits, and the owner's decision on a held one (credit, or refund by claim link; audited); roles, CSRF, another merchant's objects.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DashboardClient, invitedUser } from "../support/dashboard.ts";
import { CONFIRMATIONS, type LiveFixture, mineAndScan, payer, startLiveFixture, usdt } from "../support/live.ts";
import { createMerchant, expectProblem, merchant } from "../support/server.ts";

let live: LiveFixture;
let shop: Awaited<ReturnType<typeof createMerchant>>;
let owner: DashboardClient;
let developer: DashboardClient;
let viewer: DashboardClient;
let stranger: DashboardClient;

beforeAll(async () => {
  live = await startLiveFixture();
  shop = await createMerchant(live.server, { feePercent: "1" });
  const other = await createMerchant(live.server);
  owner = await invitedUser(live.server, shop.id, "owner");
  developer = await invitedUser(live.server, shop.id, "developer");
  viewer = await invitedUser(live.server, shop.id, "viewer");
  stranger = await invitedUser(live.server, other.id, "owner");
}, 60_000);
afterAll(async () => {
  await live?.server.close();
  await live?.chain.close();
});

async function auditOf(client: DashboardClient): Promise<{ action: string; target: string | null }[]> {
  const log = await client.call("GET", "/audit?limit=100");
  expect(log.status).toBe(200);
  return log.body.items;
}

const body = { customer: "cust-a", currency: "USDT" };

describe("dashboard deposit addresses", () => {
  it("creates (the same address again), lists by customer, deactivates and activates; viewers read only; another merchant's is 404; audited", async () => {
    const made = await developer.call("POST", "/deposit-addresses", body);
    expect(made.status, made.text).toBe(200);
    expect(made.body).toMatchObject({ ...body, networks: ["ethereum"], active: true });
    expect((await owner.call("POST", "/deposit-addresses", body)).body).toEqual(made.body);
    // The merchant API answers the same address: one per customer and currency, whoever asks.
    const viaKey = await merchant(live.server, shop.apiKey, "POST", "/public/v1/deposit-addresses", body);
    expect(viaKey.body.id).toBe(made.body.id);
    const other = await owner.call("POST", "/deposit-addresses", { customer: "cust-b", currency: "USDT" });
    expect((await viewer.call("GET", "/deposit-addresses")).body.data.map((a: { id: string }) => a.id)).toEqual([
      other.body.id,
      made.body.id,
    ]);
    const filtered = await viewer.call("GET", "/deposit-addresses?customer=cust-a");
    expect(filtered.body.data).toEqual([made.body]);
    expect((await stranger.call("GET", "/deposit-addresses")).body.data).toEqual([]);

    expectProblem(await viewer.call("POST", "/deposit-addresses", body), 403, "role_forbidden");
    expectProblem(await owner.call("POST", "/deposit-addresses", body, { csrf: null }), 403, "csrf_failed");
    expectProblem(
      await owner.call("POST", "/deposit-addresses", { ...body, currency: "NOPE" }),
      400,
      "unknown_currency",
    );
    expectProblem(await owner.call("POST", "/deposit-addresses", { ...body, customer: "" }), 400, "validation_failed");

    const path = `/deposit-addresses/${made.body.id}`;
    expectProblem(await viewer.call("PATCH", path, { active: false }), 403, "role_forbidden");
    expectProblem(await stranger.call("PATCH", path, { active: false }), 404, "deposit_address_not_found");
    expect((await owner.call("PATCH", path, { active: false })).body).toMatchObject({
      id: made.body.id,
      active: false,
    });
    expect((await developer.call("PATCH", path, { active: true })).body.active).toBe(true);
    const actions = (await auditOf(owner)).filter((a) => a.action.startsWith("deposit_address."));
    expect(actions.map((a) => [a.action, a.target])).toEqual([
      ["deposit_address.activate", made.body.id],
      ["deposit_address.deactivate", made.body.id],
      ["deposit_address.create", other.body.id],
      ["deposit_address.create", made.body.id],
    ]);
  });

  it("lists an address's deposits with their status, amounts and fees; by status; another merchant sees none", async () => {
    const made = await owner.call("POST", "/deposit-addresses", { customer: "cust-deposits", currency: "USDT" });
    const hash = await live.token.transfer(payer(live.chain, 1), made.body.address, usdt("40"));
    await mineAndScan(live.server, live.chain, CONFIRMATIONS + 1);
    const listed = await viewer.call("GET", `/deposits?depositAddressId=${made.body.id}`);
    expect(listed.status, listed.text).toBe(200);
    expect(
      listed.body.data.map((d: Record<string, unknown>) => [
        d.txHash,
        d.amount,
        d.merchantFee,
        d.networkFee,
        d.creditedAmount,
        d.status,
        d.network,
        d.customer,
      ]),
    ).toEqual([[hash, "40", "0.4", "1", "38.6", "completed", "ethereum", "cust-deposits"]]);
    expect((await viewer.call("GET", "/deposits?status=held")).body.data).toEqual([]);
    expect((await stranger.call("GET", `/deposits?depositAddressId=${made.body.id}`)).body.data).toEqual([]);
    expectProblem(await viewer.call("GET", "/deposits?status=lost"), 400, "validation_failed");
  });

  it("the owner credits one held deposit and refunds another by claim link, once each; others may not; audited", async () => {
    const made = await owner.call("POST", "/deposit-addresses", { customer: "cust-held", currency: "USDT" });
    await owner.call("PATCH", `/deposit-addresses/${made.body.id}`, { active: false });
    await live.token.transfer(payer(live.chain, 1), made.body.address, usdt("30"));
    await live.token.transfer(payer(live.chain, 1), made.body.address, usdt("12"));
    await mineAndScan(live.server, live.chain, CONFIRMATIONS + 1);
    const held = (await viewer.call("GET", `/deposits?depositAddressId=${made.body.id}&status=held`)).body.data;
    const [small, large] = [...held].sort(
      (a: { amount: string }, b: { amount: string }) => Number(a.amount) - Number(b.amount),
    );
    expect([small.amount, large.amount]).toEqual(["12", "30"]);

    const path = (id: string) => `/deposits/${id}/resolve`;
    expectProblem(await developer.call("POST", path(large.id), { action: "credit" }), 403, "role_forbidden");
    expectProblem(await stranger.call("POST", path(large.id), { action: "credit" }), 404, "deposit_not_found");
    expectProblem(await owner.call("POST", path(large.id), { action: "keep" }), 400, "validation_failed");
    const credited = await owner.call("POST", path(large.id), { action: "credit" });
    expect(credited.status, credited.text).toBe(200);
    expect(credited.body).toMatchObject({ id: large.id, status: "completed", creditedAmount: "28.7", refund: null });
    expectProblem(await owner.call("POST", path(large.id), { action: "refund" }), 409, "deposit_not_held");

    const refunded = await owner.call("POST", path(small.id), { action: "refund" });
    expect(refunded.status, refunded.text).toBe(200);
    expect(refunded.body).toMatchObject({ status: "refunded", refund: { status: "awaiting_claim", amount: "11" } });
    expect(refunded.body.refund.claimUrl).toMatch(/\/refund\/[^/]+$/);
    const listed = (await viewer.call("GET", `/deposits?depositAddressId=${made.body.id}`)).body.data;
    const shown = listed.find((d: { id: string }) => d.id === small.id);
    expect(shown.refund.status).toBe("awaiting_claim");
    expect(shown.refund).not.toHaveProperty("claimUrl");
    const actions = (await auditOf(owner)).filter(
      (a) => a.action === "deposit.credit" || a.action === "deposit.refund",
    );
    expect(actions.map((a) => [a.action, a.target])).toEqual([
      ["deposit.refund", small.id],
      ["deposit.credit", large.id],
    ]);
  });
});
