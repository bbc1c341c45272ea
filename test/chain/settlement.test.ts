// Money after detection (product §12): sweeps of ETH and of a token to the hot wallet with their gas in the ledger, and late payments resolved both ways. The ledger is audited after each.
import { parseEther } from "viem";
import { describe, expect, it } from "vitest";
import { factoryAddress, forwarderImplementationAddress } from "../../src/domain/forwarders.ts";
import { SWEEP_MAX_ATTEMPTS } from "../../src/store/sweeps.ts";
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
  outboxOf,
  payer,
  paymentRows,
  scan,
  usdt,
  useLiveFixture,
} from "../support/live.ts";
import { adjust, createRefund, refundCrypto } from "../support/refunds.ts";
import { admin, call, expectProblem } from "../support/server.ts";

const { chain, token, server } = useLiveFixture();

async function sweepsOf(invoiceId: string) {
  return server.ctx.store.db.selectFrom("sweeps").selectAll().where("invoice_id", "=", invoiceId).execute();
}

async function gasMovements() {
  return server.ctx.store.db
    .selectFrom("ledger_entries as e")
    .innerJoin("ledger_movements as m", "m.id", "e.movement_id")
    .select(["m.cause_id", "e.account", "e.currency", "e.amount"])
    .where("m.cause", "=", "sweep")
    .execute();
}

function hotAddress(): `0x${string}` {
  const hot = server.ctx.wallet?.hotAddress;
  if (!hot) throw new Error("no wallet");
  return hot;
}

describe("sweeps", () => {
  it("move a confirmed ETH deposit to the hot wallet less the gas, once, with the gas as the operator's cost", async () => {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "ETH", amount: "0.25" });
    // Made as before forwarders: a derived address, swept (product §24: the legacy drain path).
    await asLegacyDerivedInvoice(server, invoice.id);
    const address = await depositOf(server, invoice.id);
    const hotBefore = await chain.balance(hotAddress());
    await chain.waitForReceipt(await chain.sendEth(payer(chain, 2), address, parseEther("0.25")));
    await mineAndScan(server, chain, CONFIRMATIONS);
    // The sweep, mined, completes once the network's confirmations deep.
    await mineAndScan(server, chain, CONFIRMATIONS);
    const [sweep] = await sweepsOf(invoice.id);
    expect(sweep?.state).toBe("completed");
    const gas = BigInt(sweep?.gas_cost ?? "0");
    expect(gas).toBeGreaterThan(0n);
    expect(await chain.balance(address)).toBe(0n);
    expect((await chain.balance(hotAddress())) - hotBefore).toBe(parseEther("0.25") - gas);
    // Scanning on changes nothing: one sweep, one gas movement.
    await mineAndScan(server, chain, 2);
    expect(await sweepsOf(invoice.id)).toHaveLength(1);
    const movements = (await gasMovements()).filter((e) => e.cause_id === sweep?.id);
    expect(movements.map((e) => [e.account, e.currency, e.amount]).sort()).toEqual(
      [
        ["external:chain_gas", "ETH", gas.toString()],
        ["operator:network_fees", "ETH", (-gas).toString()],
      ].sort(),
    );
    expect((await balances(server, m.id)).ETH).toBe("0.2495");
    await auditAndExpect(server);
  });

  it("watch a signed sweep the network is slow to mine past every attempt bound, and record it once mined", async () => {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "ETH", amount: "0.1" });
    // Made as before forwarders: a derived address, swept (product §24: the legacy drain path).
    await asLegacyDerivedInvoice(server, invoice.id);
    const address = await depositOf(server, invoice.id);
    await chain.waitForReceipt(await chain.sendEth(payer(chain, 2), address, parseEther("0.1")));
    await chain.mine(CONFIRMATIONS);
    await chain.setAutomine(false);
    try {
      // The sweep is signed and broadcast, and then sits in the node's pool, checked again and
      // again (its next check brought forward each time) more often than any attempt bound allows.
      for (let i = 0; i < SWEEP_MAX_ATTEMPTS + 3; i++) {
        await scan(server);
        await server.ctx.store.transaction((tx) =>
          tx.db
            .updateTable("sweeps")
            .set({ next_attempt_at: "2000-01-01T00:00:00.000Z" })
            .where("invoice_id", "=", invoice.id)
            .execute(),
        );
      }
      const [waiting] = await sweepsOf(invoice.id);
      expect(waiting).toMatchObject({ state: "sweeping" });
      expect(waiting?.last_error).toMatch(/not mined yet/);
    } finally {
      await chain.setAutomine(true);
    }
    // Mined at last (and deep): the sweep completes with its gas in the ledger, once.
    await mineAndScan(server, chain, CONFIRMATIONS);
    const [sweep] = await sweepsOf(invoice.id);
    expect(sweep?.state).toBe("completed");
    expect(await chain.balance(address)).toBe(0n);
    const gas = BigInt(sweep?.gas_cost ?? "0");
    expect(gas).toBeGreaterThan(0n);
    expect((await gasMovements()).filter((e) => e.cause_id === sweep?.id)).toHaveLength(2);
    await auditAndExpect(server);
  });

  it("fund a token deposit address with gas from the hot wallet, then move the tokens to the hot wallet", async () => {
    await chain.waitForReceipt(await chain.sendEth(payer(chain, 3), hotAddress(), parseEther("1")));
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "20" });
    // Made as before forwarders: a derived address, swept (product §24: the legacy drain path).
    await asLegacyDerivedInvoice(server, invoice.id);
    const address = await depositOf(server, invoice.id);
    const tokensBefore = await token.balanceOf(hotAddress());
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), address, usdt("20")));
    await mineAndScan(server, chain, CONFIRMATIONS);
    // The funding, then the sweep, each settled once the network's confirmations deep.
    for (let i = 0; i < 3; i++) await mineAndScan(server, chain, CONFIRMATIONS);
    const [sweep] = await sweepsOf(invoice.id);
    expect(sweep?.state).toBe("completed");
    // Its gas funding is the outbox's: one transaction, confirmed.
    const fundings = await outboxOf(server, "funding");
    expect(fundings.filter((f) => f.purpose_id === sweep?.id).map((f) => f.state)).toEqual(["confirmed"]);
    expect(fundings.find((f) => f.purpose_id === sweep?.id)?.hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect((await token.balanceOf(hotAddress())) - tokensBefore).toBe(usdt("20"));
    expect(await token.balanceOf(address)).toBe(0n);
    const gas = BigInt(sweep?.gas_cost ?? "0");
    expect(gas).toBeGreaterThan(0n);
    const movements = (await gasMovements()).filter((e) => e.cause_id === sweep?.id);
    expect(movements).toHaveLength(2);
    expect((await balances(server, m.id)).USDT).toBe("19");
    await auditAndExpect(server);
  });
});

describe("refunds of live payments", () => {
  it("go back to the recorded sender with withdrawToSameAddress, and refuse an address that is not one", async () => {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "10" });
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), await depositOf(server, invoice.id), usdt("10")));
    await mineAndScan(server, chain, CONFIRMATIONS);
    expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("completed");
    // A refund pays back paid_amount: 1 USDT more than the credit (the network fee).
    await adjust(server, m.id, "USDT", "1");
    const mistyped = await refundCrypto(server, m, { invoiceId: invoice.id, address: "0xnot-an-address" });
    expectProblem(mistyped.answer, 400, "invalid_address");
    const refunded = await refundCrypto(server, m, { invoiceId: invoice.id, withdrawToSameAddress: true });
    expect(refunded.answer.status).toBe(200);
    expect(refunded.answer.body.request.to_address).toBe(payer(chain, 1));
    await auditAndExpect(server);
  });
});

describe("a refund claim", () => {
  it("refuses the zero address, the token's contract and the service's own addresses (400 invalid_address), then takes the payer's", async () => {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "10" });
    const deposit = await depositOf(server, invoice.id);
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), deposit, usdt("10")));
    await mineAndScan(server, chain, CONFIRMATIONS);
    expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("completed");
    const created = await createRefund(server, m, { invoiceId: invoice.id, type: "crypto", amount: "5", claim: true });
    expect(created.answer.status, created.answer.text).toBe(200);
    const path = new URL(created.answer.body.claimUrl).pathname;
    const other = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "10" });
    const factory = factoryAddress(hotAddress());
    const refused = {
      zero: `0x${"0".repeat(40)}`,
      tokenContract: token.address,
      hotWallet: hotAddress(),
      factory,
      forwarderImplementation: forwarderImplementationAddress(factory),
      thisInvoicesForwarder: deposit,
      anotherInvoicesForwarder: (await depositOf(server, other.id)).toLowerCase(),
    };
    for (const [kind, address] of Object.entries(refused)) {
      const answer = await call(server.baseUrl, "POST", path, { body: { address } });
      expect(answer.status, `${kind}: ${answer.text}`).toBe(400);
      expectProblem(answer, 400, "invalid_address");
    }
    const claimed = await call(server.baseUrl, "POST", path, { body: { address: payer(chain, 1) } });
    expect(claimed.status, claimed.text).toBe(200);
    expect(claimed.body.request.to_address).toBe(payer(chain, 1));
    await auditAndExpect(server);
  });
});

describe("a late payment", () => {
  async function expiredInvoiceWithLatePayment() {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, {
      currency: "USDT",
      amount: "10",
      expiresAt: new Date(Date.now() + 1500).toISOString(),
    });
    const address = await depositOf(server, invoice.id);
    // Block stamps are whole seconds: a block mined a second after expires_at is stamped after it.
    await new Promise((resolve) => setTimeout(resolve, 2600));
    // The invoice expires by the chain's clock: once a block stamped after expires_at is scanned.
    await mineAndScan(server, chain, 1);
    await server.workers.loops.expiry?.runOnce();
    expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("expired");
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), address, usdt("10")));
    await mineAndScan(server, chain, CONFIRMATIONS);
    const late = await getInvoice(server, m.apiKey, invoice.id);
    expect(late.status).toBe("expired");
    const rows = await server.ctx.store.db
      .selectFrom("invoice_payments")
      .select(["late", "confirmed", "amount"])
      .where("invoice_id", "=", invoice.id)
      .execute();
    expect(rows).toEqual([{ late: 1, confirmed: 1, amount: "10000000" }]);
    expect((await balances(server, m.id)).USDT ?? "0").toBe("0");
    return { m, invoice };
  }

  it("is recorded on the expired invoice and, accepted, completes it and credits the merchant once", async () => {
    const { m, invoice } = await expiredInvoiceWithLatePayment();
    const accepted = await admin(server, "POST", `/invoices/${invoice.id}/resolve`, { action: "accept" });
    expect(accepted.status).toBe(200);
    expect(accepted.body.status).toBe("completed");
    expect((await balances(server, m.id)).USDT).toBe("9");
    expectProblem(
      await admin(server, "POST", `/invoices/${invoice.id}/resolve`, { action: "accept" }),
      409,
      "invoice_already_resolved",
    );
    expect((await balances(server, m.id)).USDT).toBe("9");
    await auditAndExpect(server);
  });

  it("refunded, is paid back to the payer through a refund payout, once", async () => {
    const { m, invoice } = await expiredInvoiceWithLatePayment();
    expectProblem(
      await admin(server, "POST", `/invoices/${invoice.id}/resolve`, { action: "refund", address: "0x1234" }),
      400,
      "invalid_address",
    );
    expectProblem(
      await admin(server, "POST", `/invoices/${invoice.id}/resolve`, { action: "refund" }),
      400,
      "invalid_resolution",
    );
    const refunded = await admin(server, "POST", `/invoices/${invoice.id}/resolve`, {
      action: "refund",
      address: payer(chain, 1),
    });
    expect(refunded.status).toBe(200);
    expect(refunded.body.status).toBe("expired");
    const payout = await server.ctx.store.db
      .selectFrom("payouts")
      .selectAll()
      .where("request_id", "=", `resolution-${invoice.id}`)
      .executeTakeFirstOrThrow();
    // The confirmed 10 less the 1 USDT network fee, to the payer.
    expect([payout.operation, payout.currency, payout.amount, payout.destination]).toEqual([
      "refund",
      "USDT",
      "9000000",
      payer(chain, 1),
    ]);
    expect((await balances(server, m.id)).USDT ?? "0").toBe("0");
    expectProblem(
      await admin(server, "POST", `/invoices/${invoice.id}/resolve`, { action: "accept" }),
      409,
      "invoice_already_resolved",
    );
    await auditAndExpect(server);
  });

  it("arriving after a refund resolution is resolved again, by refund while the first refund is live (409 payments_unconfirmed until confirmed)", async () => {
    const { m, invoice } = await expiredInvoiceWithLatePayment();
    const first = await admin(server, "POST", `/invoices/${invoice.id}/resolve`, {
      action: "refund",
      address: payer(chain, 1),
    });
    expect(first.status).toBe(200);
    // More money reaches the deposit address after the resolution.
    const address = await depositOf(server, invoice.id);
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), address, usdt("5")));
    await scan(server);
    expectProblem(
      await admin(server, "POST", `/invoices/${invoice.id}/resolve`, { action: "accept" }),
      409,
      "payments_unconfirmed",
    );
    await mineAndScan(server, chain, CONFIRMATIONS);
    // The first resolution's refund is still live: the later money is refunded too (a refund of
    // its own, beside the first), never stranded.
    const firstPayout = await server.ctx.store.db
      .selectFrom("payouts")
      .select("state")
      .where("request_id", "=", `resolution-${invoice.id}`)
      .executeTakeFirstOrThrow();
    expect(firstPayout.state).not.toBe("completed");
    const second = await admin(server, "POST", `/invoices/${invoice.id}/resolve`, {
      action: "refund",
      address: payer(chain, 2),
    });
    expect(second.status).toBe(200);
    expect(second.body.status).toBe("expired");
    const refunds = await server.ctx.store.db
      .selectFrom("payouts")
      .select(["request_id", "amount", "destination"])
      .where("request_id", "like", `resolution-${invoice.id}%`)
      .orderBy("request_id")
      .execute();
    // Each covers only its own payments, less the 1 USDT network fee.
    expect(refunds.map((r) => [r.request_id, r.amount, r.destination])).toEqual([
      [`resolution-${invoice.id}`, "9000000", payer(chain, 1)],
      [`resolution-${invoice.id}-2`, "4000000", payer(chain, 2)],
    ]);
    expect((await balances(server, m.id)).USDT ?? "0").toBe("0");
    const covered = await server.ctx.store.db
      .selectFrom("invoice_payments")
      .select(["amount", "resolved_at"])
      .where("invoice_id", "=", invoice.id)
      .orderBy("created_at")
      .execute();
    expect(covered.map((p) => [p.amount, p.resolved_at !== null])).toEqual([
      ["10000000", true],
      ["5000000", true],
    ]);
    // Nothing is left to resolve, and the merchant's own refunds still see a refunded invoice.
    expectProblem(
      await admin(server, "POST", `/invoices/${invoice.id}/resolve`, { action: "refund", address: payer(chain, 1) }),
      409,
      "invoice_already_resolved",
    );
    // A third payment, later still, is resolved again, by accept this time: only its own money.
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), address, usdt("3")));
    await mineAndScan(server, chain, CONFIRMATIONS);
    const accepted = await admin(server, "POST", `/invoices/${invoice.id}/resolve`, { action: "accept" });
    expect(accepted.status).toBe(200);
    expect(accepted.body.status).toBe("completed");
    expect((await balances(server, m.id)).USDT).toBe("2");
    expectProblem(
      await admin(server, "POST", `/invoices/${invoice.id}/resolve`, { action: "accept" }),
      409,
      "invoice_already_resolved",
    );
    await auditAndExpect(server);
  });

  it("to a completed invoice is credited as an overpayment once confirmed, without a resolution", async () => {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "10" });
    const address = await depositOf(server, invoice.id);
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), address, usdt("10")));
    await mineAndScan(server, chain, CONFIRMATIONS);
    expect((await balances(server, m.id)).USDT).toBe("9");
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), address, usdt("3")));
    await scan(server);
    const seen = await getInvoice(server, m.apiKey, invoice.id);
    expect([seen.status, seen.paid_amount]).toEqual(["completed", "13"]);
    expect((await balances(server, m.id)).USDT).toBe("9");
    await mineAndScan(server, chain, CONFIRMATIONS);
    expect((await balances(server, m.id)).USDT).toBe("12");
    await mineAndScan(server, chain, 1);
    expect((await balances(server, m.id)).USDT).toBe("12");
    await auditAndExpect(server);
  });

  // Found by the seeded simulation (docs/simulation.md): a payment to an invoice already refunded
  // was recorded late, never credited and could not be resolved (409 nothing_to_resolve): money the
  // service held that nobody could ever claim.
  it("to a refunded invoice is credited as an overpayment once confirmed, as to a completed one", async () => {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "10" });
    const address = await depositOf(server, invoice.id);
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), address, usdt("10")));
    await mineAndScan(server, chain, CONFIRMATIONS);
    await adjust(server, m.id, "USDT", "1");
    const refunded = await refundCrypto(server, m, { invoiceId: invoice.id, withdrawToSameAddress: true });
    expect(refunded.answer.status).toBe(200);
    expect((await balances(server, m.id)).USDT).toBe("0");
    expect((await getInvoice(server, m.apiKey, invoice.id)).status).toMatch(/^refund/);
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), address, usdt("4")));
    await mineAndScan(server, chain, CONFIRMATIONS);
    expect((await balances(server, m.id)).USDT).toBe("4");
    await mineAndScan(server, chain, 1);
    expect((await balances(server, m.id)).USDT).toBe("4");
    await auditAndExpect(server);
  });

  // Found by the seeded simulation (docs/simulation.md): a late payment confirmed while its invoice
  // still waited for an on-time payment to confirm was credited to no one once the invoice completed.
  it("confirmed before the invoice completes is credited when it completes", async () => {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, {
      currency: "USDT",
      amount: "10",
      expiresAt: new Date(Date.now() + 60_000).toISOString(),
    });
    const address = await depositOf(server, invoice.id);
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), address, usdt("10")));
    await scan(server);
    // The chain's clock passes the expiry: the next transfer is late; both confirm in one pass.
    await chain.increaseTime(120);
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), address, usdt("3")));
    await mineAndScan(server, chain, CONFIRMATIONS);
    const rows = await paymentRows(server, invoice.id);
    expect(rows.map((r) => [r.amount, r.late, r.confirmed]).sort()).toEqual([
      ["10000000", 0, 1],
      ["3000000", 1, 1],
    ]);
    expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("completed");
    expect((await balances(server, m.id)).USDT).toBe("12");
    await auditAndExpect(server);
  });

  it("cannot be resolved on an invoice that has nothing confirmed", async () => {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "10" });
    expectProblem(
      await admin(server, "POST", `/invoices/${invoice.id}/resolve`, { action: "accept" }),
      409,
      "nothing_to_resolve",
    );
  });
});
