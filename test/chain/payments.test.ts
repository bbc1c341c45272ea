// Live payments on a local chain (product §12): exact, under then topped up, over, ETH; confirmations, the payer's status, callbacks-free credit, and the ledger after each.
import { parseUnits } from "viem";
import { describe, expect, it } from "vitest";
import { balances } from "../support/invoices.ts";
import {
  asLegacyDerivedInvoice,
  auditAndExpect,
  CONFIRMATIONS,
  depositOf,
  getInvoice,
  liveInvoice,
  liveMerchant,
  mineAndScan,
  payer,
  scan,
  usdt,
  useLiveFixture,
} from "../support/live.ts";
import { call } from "../support/server.ts";

const { chain, token, server } = useLiveFixture();

describe("a USDT invoice paid on the chain", () => {
  it("goes processing when seen, completes at depth, credits the merchant, and shows confirmations", async () => {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "25" });
    // Made as before forwarders (a derived address), so that its sweep is queued (product §24: drained the old way).
    await asLegacyDerivedInvoice(server, invoice.id);
    const wallet = server.ctx.wallet;
    if (!wallet) throw new Error("no wallet");
    const stored = await server.ctx.store.db
      .selectFrom("invoices")
      .select(["deposit_address", "deposit_index"])
      .where("id", "=", invoice.id)
      .executeTakeFirstOrThrow();
    expect(stored.deposit_address).toBe(wallet.deposits?.address(Number(stored.deposit_index)));
    const status = await call(server.baseUrl, "GET", `/pay/${invoice.id}/status`);
    expect(status.body.address).toBe(stored.deposit_address);
    expect(status.body.paymentUri).toBe(
      `ethereum:${token.address}@${chain.chainId}/transfer?address=${stored.deposit_address}&uint256=25000000`,
    );

    await chain.waitForReceipt(
      await token.transfer(payer(chain, 1), stored.deposit_address as `0x${string}`, usdt("25")),
    );
    await scan(server);
    const seen = await getInvoice(server, m.apiKey, invoice.id);
    expect(seen.status).toBe("processing");
    expect(seen.paid_amount).toBe("25");
    const confirming = await call(server.baseUrl, "GET", `/pay/${invoice.id}/status`);
    expect(confirming.body.payments).toMatchObject([
      { amount: "25", confirmations: 1, requiredConfirmations: CONFIRMATIONS, state: "confirming" },
    ]);
    expect((await balances(server, m.id)).USDT ?? "0").toBe("0");

    await mineAndScan(server, chain, CONFIRMATIONS - 1);
    const done = await getInvoice(server, m.apiKey, invoice.id);
    expect(done.status).toBe("completed");
    // 25 less the 1 USDT network fee.
    expect((await balances(server, m.id)).USDT).toBe("24");
    const payment = await server.ctx.store.db
      .selectFrom("invoice_payments")
      .selectAll()
      .where("invoice_id", "=", invoice.id)
      .executeTakeFirstOrThrow();
    expect(payment.from_address).toBe(payer(chain, 1));
    expect(payment.amount).toBe("25000000");
    // Scanning again credits nothing more.
    await mineAndScan(server, chain, 2);
    expect((await balances(server, m.id)).USDT).toBe("24");
    // The hot wallet has no ETH for the token sweep's gas: the sweep waits, without using up its attempts.
    const sweep = await server.ctx.store.db
      .selectFrom("sweeps")
      .selectAll()
      .where("invoice_id", "=", invoice.id)
      .executeTakeFirstOrThrow();
    expect([sweep.state, sweep.attempts]).toEqual(["pending", 0]);
    expect(sweep.last_error).toMatch(/hot wallet cannot pay/);
    await auditAndExpect(server);
  });

  it("an underpayment stays processing; a top-up completes it", async () => {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "10" });
    const address = await depositOf(server, invoice.id);
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), address, usdt("4")));
    await mineAndScan(server, chain, CONFIRMATIONS);
    const partial = await getInvoice(server, m.apiKey, invoice.id);
    expect(partial.status).toBe("processing");
    expect(partial.paid_amount).toBe("4");
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), address, usdt("6")));
    await mineAndScan(server, chain, CONFIRMATIONS);
    const done = await getInvoice(server, m.apiKey, invoice.id);
    expect(done.status).toBe("completed");
    expect(done.paid_amount).toBe("10");
    expect((await balances(server, m.id)).USDT).toBe("9");
    await auditAndExpect(server);
  });

  it("an overpayment completes and credits the surplus; two Transfer logs of one transaction count twice", async () => {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "10" });
    const address = await depositOf(server, invoice.id);
    await chain.waitForReceipt(await token.transferTwice(payer(chain, 1), address, usdt("8"), usdt("4.5")));
    await mineAndScan(server, chain, CONFIRMATIONS);
    const done = await getInvoice(server, m.apiKey, invoice.id);
    expect(done.status).toBe("completed");
    expect(done.paid_amount).toBe("12.5");
    expect((await balances(server, m.id)).USDT).toBe("11.5");
    await auditAndExpect(server);
  });

  it("an ETH invoice is paid by a plain transfer", async () => {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "ETH", amount: "0.5" });
    const address = await depositOf(server, invoice.id);
    await chain.waitForReceipt(await chain.sendEth(payer(chain, 2), address, parseUnits("0.5", 18)));
    await mineAndScan(server, chain, CONFIRMATIONS);
    const done = await getInvoice(server, m.apiKey, invoice.id);
    expect(done.status).toBe("completed");
    // 0.5 less the 0.0005 ETH network fee.
    expect((await balances(server, m.id)).ETH).toBe("0.4995");
    await auditAndExpect(server);
  });
});
