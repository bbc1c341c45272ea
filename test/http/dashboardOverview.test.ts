// The dashboard overview on both stores: its 30-day picture (volume per day and currency, invoice outcomes), recent activity as sentences, and the withdraw form's review step.
import { beforeAll, describe, expect, it } from "vitest";
import { type DashboardClient, invitedUser } from "../support/dashboard.ts";
import { useTestServer } from "../support/fixture.ts";
import { createInvoice, pay } from "../support/invoices.ts";
import { adjust } from "../support/refunds.ts";
import { admin, createMerchant, expectProblem } from "../support/server.ts";
import { balanceOf, type FundedMerchant, fundedMerchant } from "../support/withdrawals.ts";

const server = useTestServer();

const DAY_MS = 86_400_000;

function utcDay(msAgo: number): string {
  return new Date(Date.now() - msAgo).toISOString().slice(0, 10);
}

/** Moves an invoice's creation `days` back (what a month of history would have written). */
async function createdDaysAgo(id: string, days: number): Promise<void> {
  await server.ctx.store.transaction((tx) =>
    tx.db
      .updateTable("invoices")
      .set({ created_at: new Date(Date.now() - days * DAY_MS).toISOString() })
      .where("id", "=", id)
      .execute(),
  );
}

/** Lets an invoice's expiry pass and runs the expiry worker, as the service would. */
async function expire(id: string): Promise<void> {
  await server.ctx.store.transaction((tx) =>
    tx.db
      .updateTable("invoices")
      .set({ expires_at: new Date(Date.now() - 60_000).toISOString() })
      .where("id", "=", id)
      .execute(),
  );
  const expiry = server.workers.loops.expiry;
  if (!expiry) throw new Error("no expiry loop");
  for (let i = 0; i < 10 && (await expiry.runOnce()) > 0; i += 1) {}
}

describe("overview picture", () => {
  it("sums what completed invoices took per day and currency, exactly, and counts outcomes", async () => {
    const shop = await createMerchant(server, { merchantName: "Chart shop" });
    const viewer = await invitedUser(server, shop.id, "viewer");
    const paid = async (body: Record<string, unknown>, days: number) => {
      const invoice = await createInvoice(server, shop.apiKey, body);
      expect((await pay(server, shop.apiKey, invoice.id, {})).status).toBe(200);
      await createdDaysAgo(invoice.id, days);
      return invoice;
    };
    // 18-decimal amounts whose sum needs more than 64 bits of minor units: exact on both engines.
    await paid({ currency: "ETH", amount: "12.345678901234567891" }, 0);
    await paid({ currency: "ETH", amount: "7.654321098765432109" }, 0);
    await paid({ currency: "USDT", amount: "49.9" }, 3);
    await paid({ currency: "USDT", amount: "10.1" }, 3);
    await paid({ currency: "USDT", amount: "5" }, 40); // before the window: not drawn
    const expired = await createInvoice(server, shop.apiKey, { currency: "USDT", amount: "8" });
    await expire(expired.id);
    await createdDaysAgo(expired.id, 3);
    const partly = await createInvoice(server, shop.apiKey, { currency: "USDT", amount: "10" });
    await pay(server, shop.apiKey, partly.id, { amount: "4" });
    await expire(partly.id); // failed: expired part-paid
    await createInvoice(server, shop.apiKey, { currency: "USDT", amount: "3" }); // still open

    const answer = await viewer.call("GET", "/overview/chart");
    expect(answer.status).toBe(200);
    const chart = answer.body;
    expect(chart.outcomes).toHaveLength(30);
    expect(chart.to).toBe(utcDay(0));
    expect(chart.from).toBe(utcDay(29 * DAY_MS));
    const on = (day: string) => chart.outcomes.find((o: { day: string }) => o.day === day);
    expect(on(utcDay(0))).toEqual({ day: utcDay(0), completed: 2, expired: 1, other: 1 });
    expect(on(utcDay(3 * DAY_MS))).toEqual({ day: utcDay(3 * DAY_MS), completed: 2, expired: 1, other: 0 });
    const total = chart.outcomes.reduce(
      (sum: number, o: { completed: number; expired: number; other: number }) =>
        sum + o.completed + o.expired + o.other,
      0,
    );
    expect(total).toBe(7);
    expect(chart.volume.map((v: { currency: string }) => v.currency)).toEqual(["ETH", "USDT"]);
    const [eth, usdt] = chart.volume;
    expect(eth.total).toBe("20");
    expect(eth.perDay).toHaveLength(30);
    expect(eth.perDay[29]).toBe("20");
    expect(usdt.total).toBe("60");
    expect(usdt.perDay[26]).toBe("60");
    expect(usdt.perDay.filter((v: string) => v !== "0")).toEqual(["60"]);
  });

  it("is empty for a new merchant, and needs a session", async () => {
    const shop = await createMerchant(server, {});
    const viewer = await invitedUser(server, shop.id, "viewer");
    const chart = (await viewer.call("GET", "/overview/chart")).body;
    expect(chart.volume).toEqual([]);
    expect(chart.outcomes.every((o: { completed: number; other: number }) => o.completed + o.other === 0)).toBe(true);
    const anonymous = await fetch(`${server.baseUrl}/dashboard/v1/overview/chart`);
    expect(anonymous.status).toBe(401);
  });
});

describe("recent activity", () => {
  it("reads as sentences with the amounts, newest first", async () => {
    const shop = await fundedMerchant(server, "100");
    const owner = await invitedUser(server, shop.id, "owner");
    const invoice = await createInvoice(server, shop.apiKey, { currency: "USDT", amount: "49.9", order_no: "A-1042" });
    await pay(server, shop.apiKey, invoice.id, { amount: "20", confirmed: false });
    await pay(server, shop.apiKey, invoice.id, { amount: "29.9" });
    await pay(server, shop.apiKey, invoice.id, {
      txId: (
        await server.ctx.store.db
          .selectFrom("invoice_payments")
          .select("tx_id")
          .where("invoice_id", "=", invoice.id)
          .where("confirmed", "=", 0)
          .executeTakeFirstOrThrow()
      ).tx_id,
      confirmed: true,
    });
    const overview = (await owner.call("GET", "/overview")).body;
    const sentences = overview.recent.map((r: { summary: string }) => r.summary);
    expect(sentences).toContain("The invoice for order A-1042 was paid: 49.9 USDT received.");
    expect(sentences).toContain(
      "The invoice for order A-1042 received 20 USDT of 49.9 USDT; it waits for confirmations or the rest.",
    );
    for (const r of overview.recent) expect(r.summary).not.toMatch(/^invoice\./);
  });
});

describe("withdraw review", () => {
  let shop: FundedMerchant;
  let owner: DashboardClient;

  beforeAll(async () => {
    shop = await fundedMerchant(server, "100");
    owner = await invitedUser(server, shop.id, "owner");
  });

  it("shows the fee, the amount received and the balance after, and sends nothing", async () => {
    const answer = await owner.call("POST", "/withdrawals/review", {
      currency: "USDT",
      amount: "25.5",
      withdrawalMethodId: shop.methodId,
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({
      currency: "USDT",
      network: "ethereum",
      amount: "25.5",
      fee: "0",
      receiveAmount: "25.5",
      balance: "100",
      balanceAfter: "74.5",
      withdrawalMethodId: shop.methodId,
    });
    expect(answer.body.destination).toMatch(/^0x[0-9a-fA-F]{40}$/);
    expect(await balanceOf(server, shop.id)).toBe("100");
    const rows = await server.ctx.store.db
      .selectFrom("withdrawals")
      .select("request_id")
      .where("merchant_id", "=", shop.id)
      .execute();
    expect(rows).toEqual([]);
  });

  it("refuses what the withdrawal would refuse, with the same codes", async () => {
    const review = (body: Record<string, unknown>) =>
      owner.call("POST", "/withdrawals/review", { currency: "USDT", withdrawalMethodId: shop.methodId, ...body });
    expectProblem(await review({ amount: "1000" }), 400, "insufficient_balance");
    expectProblem(await review({ amount: "1" }), 400, "amount_below_minimum");
    expectProblem(await review({ amount: "abc" }), 400, "invalid_amount");
    expectProblem(await review({ amount: "20", currency: "ETH" }), 400, "withdrawal_method_currency_mismatch");
    const other = await fundedMerchant(server, "100");
    expectProblem(
      await review({ amount: "20", withdrawalMethodId: other.methodId }),
      400,
      "withdrawal_method_not_found",
    );
    expectProblem(
      await review({ amount: "20", withdrawalMethodId: 9_999_999_999 }),
      400,
      "withdrawal_method_not_found",
    );
    expectProblem(await review({ amount: "20", extra: 1 }), 400, "validation_failed");
    const viewer = await invitedUser(server, shop.id, "viewer");
    expectProblem(
      await viewer.call("POST", "/withdrawals/review", {
        currency: "USDT",
        amount: "20",
        withdrawalMethodId: shop.methodId,
      }),
      403,
      "role_forbidden",
    );
    expectProblem(
      await owner.call(
        "POST",
        "/withdrawals/review",
        { currency: "USDT", amount: "20", withdrawalMethodId: shop.methodId },
        { csrf: null },
      ),
      403,
      "csrf_failed",
    );
    await adjust(server, shop.id, "USDT", "0.5");
    expect(await balanceOf(server, shop.id)).toBe("100.5");
    const disabled = await admin(server, "POST", `/merchants/${shop.id}/withdrawal-methods/${shop.methodId}/disable`);
    expect(disabled.status).toBe(200);
    expectProblem(await review({ amount: "20" }), 400, "withdrawal_method_disabled");
  });
});
