// Expiry follows the chain (product §19): an invoice with a deposit address expires only once its network's scanner has passed a block stamped after expires_at, so a payment in time is never late because the scanner was slow or stopped.
import { parseEther } from "viem";
import { describe, expect, it } from "vitest";
import { balances } from "../support/invoices.ts";
import {
  auditAndExpect,
  CONFIRMATIONS,
  depositOf,
  getInvoice,
  liveInvoice,
  liveMerchant,
  mineAndScan,
  payer,
  paymentRows,
  useLiveFixture,
} from "../support/live.ts";

const { chain, server } = useLiveFixture();

async function expire() {
  await server.workers.loops.expiry?.runOnce();
}

async function waitUntil(iso: string) {
  // Block stamps are whole seconds: a block mined a second after expires_at is stamped after it.
  const wait = Date.parse(iso) - Date.now() + 1100;
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
}

describe("expiry of an invoice with a deposit address", () => {
  it("waits for the scanner: a payment mined in time and scanned after expires_at is on time and completes the invoice", async () => {
    const m = await liveMerchant(server);
    const expiresAt = new Date(Date.now() + 3000).toISOString();
    const invoice = await liveInvoice(server, m.apiKey, { currency: "ETH", amount: "0.1", expiresAt });
    await chain.waitForReceipt(
      await chain.sendEth(payer(chain, 2), await depositOf(server, invoice.id), parseEther("0.1")),
    );
    // The scanner is stopped while expires_at passes; the expiry worker runs on time.
    await waitUntil(expiresAt);
    await expire();
    expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("pending");
    // The scanner comes back: the payment's block is stamped before expires_at.
    await mineAndScan(server, chain, CONFIRMATIONS);
    await expire();
    const paid = await getInvoice(server, m.apiKey, invoice.id);
    expect([paid.status, paid.paid_amount]).toEqual(["completed", "0.1"]);
    expect((await paymentRows(server, invoice.id)).map((p) => p.late)).toEqual([0]);
    expect((await balances(server, m.id)).ETH).toBe("0.0995");
    await auditAndExpect(server);
  });

  it("expires an unpaid invoice once the scanner passed a block stamped after expires_at", async () => {
    const m = await liveMerchant(server);
    const expiresAt = new Date(Date.now() + 2000).toISOString();
    const invoice = await liveInvoice(server, m.apiKey, { currency: "ETH", amount: "0.1", expiresAt });
    await waitUntil(expiresAt);
    await expire();
    expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("pending");
    await mineAndScan(server, chain, 1);
    const scanned = await server.ctx.store.db
      .selectFrom("networks")
      .select("scanned_time")
      .where("name", "=", "ethereum")
      .executeTakeFirstOrThrow();
    expect(String(scanned.scanned_time) > expiresAt).toBe(true);
    await expire();
    expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("expired");
  });
});

describe("a reorganisation after expiry waited for confirmations", () => {
  // Found by the simulation (seed 104): the payment that deferred the expiry was dropped, and the
  // invoice stayed `processing` for good, so a later payment to it was never resolved.
  it("lets the expiry worker decide again: the invoice fails and its late payment waits for a resolution", async () => {
    const m = await liveMerchant(server);
    const expiresAt = new Date(Date.now() + 3000).toISOString();
    const invoice = await liveInvoice(server, m.apiKey, { currency: "ETH", amount: "0.1", expiresAt });
    const address = await depositOf(server, invoice.id);
    const snapshot = await chain.snapshot();
    await chain.waitForReceipt(await chain.sendEth(payer(chain, 2), address, parseEther("0.1")));
    await waitUntil(expiresAt);
    await mineAndScan(server, chain, 1);
    await expire();
    expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("processing");

    await chain.revert(snapshot);
    await chain.increaseTime(5);
    await mineAndScan(server, chain, 3);
    expect(await paymentRows(server, invoice.id)).toEqual([]);
    await expire();
    expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("failed");

    await chain.waitForReceipt(await chain.sendEth(payer(chain, 2), address, parseEther("0.1")));
    await mineAndScan(server, chain, CONFIRMATIONS);
    expect((await paymentRows(server, invoice.id)).map((p) => [p.late, p.confirmed])).toEqual([[1, 1]]);
    await auditAndExpect(server);
  });
});
