// The SDK's customers' deposit addresses and deposits (product §30) against a live service on a local chain (SQLite and PostgreSQL): create (the same address again), read, list by customer, deactivate and activate; a transfer's deposit listed, filtered, read, and its typed event.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CONFIRMATIONS,
  type LiveFixture,
  mineAndScan,
  payer,
  startLiveFixture,
  usdt,
} from "../../../../test/support/live.ts";
import { createMerchant } from "../../../../test/support/server.ts";
import { type Deposit, PaymentsApiError, PaymentsClient, type PaymentsEvent } from "../../src/index.ts";

let live: LiveFixture;
beforeAll(async () => {
  live = await startLiveFixture();
}, 60_000);
afterAll(async () => {
  await live?.server.close();
  await live?.chain.close();
});

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

async function client(): Promise<PaymentsClient> {
  const m = await createMerchant(live.server, { feePercent: "1" });
  return new PaymentsClient({ baseUrl: live.server.baseUrl, apiKey: m.apiKey, secretKey: m.secretKey });
}

describe("PaymentsClient, deposit addresses and deposits", () => {
  it("creates the same address for the same customer, reads, lists by customer, deactivates and activates", async () => {
    const shop = await client();
    const first = await shop.createDepositAddress({ customer: "cust-1", currency: "USDT" });
    expect(first).toMatchObject({ customer: "cust-1", currency: "USDT", networks: ["ethereum"], active: true });
    expect(await shop.createDepositAddress({ customer: "cust-1", currency: "USDT" })).toEqual(first);
    const second = await shop.createDepositAddress({ customer: "cust-2", currency: "USDT" });
    expect(second.address).not.toBe(first.address);
    expect(await shop.getDepositAddress(first.id)).toEqual(first);
    expect((await all(shop.listDepositAddresses({ limit: 1 }))).map((a) => a.id)).toEqual([second.id, first.id]);
    expect((await all(shop.listDepositAddresses({ customer: "cust-2" }))).map((a) => a.id)).toEqual([second.id]);
    expect((await shop.updateDepositAddress(first.id, { active: false })).active).toBe(false);
    expect((await shop.updateDepositAddress(first.id, { active: true })).active).toBe(true);
    const unknown = await refusal(shop.createDepositAddress({ customer: "cust-1", currency: "NOPE" }));
    expect([unknown.status, unknown.code]).toEqual([400, "unknown_currency"]);
    const missing = await refusal(shop.getDepositAddress("no-such-address"));
    expect([missing.status, missing.code]).toEqual([404, "deposit_address_not_found"]);
    // Another merchant's address is not found either.
    const other = await client();
    expect((await refusal(other.updateDepositAddress(first.id, { active: false }))).code).toBe(
      "deposit_address_not_found",
    );
  });

  it("lists, filters and reads a transfer's deposit, and types its deposit.completed event", async () => {
    const shop = await client();
    const address = await shop.createDepositAddress({ customer: "cust-9", currency: "USDT" });
    const hash = await live.token.transfer(payer(live.chain, 1), address.address as `0x${string}`, usdt("20"));
    await mineAndScan(live.server, live.chain, CONFIRMATIONS + 1);
    const deposits = await all(shop.listDeposits({ deposit_address_id: address.id }));
    expect(deposits.map((d) => [d.txHash, d.amount, d.merchantFee, d.networkFee, d.creditedAmount, d.status])).toEqual([
      [hash, "20", "0.2", "1", "18.8", "completed"],
    ]);
    const deposit = deposits[0] as Deposit;
    expect(await shop.getDeposit(deposit.id)).toEqual(deposit);
    expect(await all(shop.listDeposits({ status: "held" }))).toEqual([]);
    expect((await all(shop.listDeposits({ network: "ethereum", status: "completed" }))).map((d) => d.id)).toEqual([
      deposit.id,
    ]);
    const events: PaymentsEvent[] = await all(shop.listEvents({ type: "deposit.completed" }));
    const event = events[0];
    if (event?.type !== "deposit.completed") throw new Error("no deposit.completed event");
    expect(event.data.deposit).toMatchObject({ id: deposit.id, status: "completed" });
    expect((await refusal(shop.getDeposit("no-such-deposit"))).code).toBe("deposit_not_found");
  });
});
