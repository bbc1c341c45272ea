// Fixed quotes with static rates (product §22): an operator's rate change after an invoice was made moves neither its autoconvert credit nor its fiat refund; payments carry their USD value.
import { describe, expect, it } from "vitest";
import { useTestServer } from "../support/fixture.ts";
import { balances, createInvoice, pay } from "../support/invoices.ts";
import { adjust, createRefund, feeFreeMerchant, invoiceStatus, refundFiat } from "../support/refunds.ts";
import { admin, merchant } from "../support/server.ts";

const server = useTestServer();

/** Sets a catalog entry's static rate the way an operator does (the rest of the entry as seeded). */
async function setRate(ticker: string, rateUsd: string): Promise<void> {
  const list = await admin(server, "GET", "/currencies");
  const entry = list.body.find((c: { ticker: string }) => c.ticker === ticker);
  const info = (await merchant(server, "", "GET", "/public/v1/currencies")).body.find(
    (c: { ticker: string }) => c.ticker === ticker,
  );
  const put = await admin(server, "PUT", `/currencies/${ticker}`, {
    fullName: info.fullName,
    network: info.network,
    contractAddress: info.contractAddress,
    type: info.type,
    icon: `/icons/${ticker.toLowerCase()}.svg`,
    iconDark: `/icons/${ticker.toLowerCase()}-dark.svg`,
    internalTicker: info.internalTicker,
    decimals: entry.decimals,
    networkFee: entry.networkFee,
    withdrawalMin: entry.withdrawalMin,
    withdrawalMax: entry.withdrawalMax,
    rateUsd,
  });
  expect(put.status, put.text).toBe(200);
}

/** A 100 USDT invoice autoconverted to EUR (at 1.08), paid; then EUR's rate set to 1.25 (callers set it back). */
async function paidThenRateChanged() {
  const m = await feeFreeMerchant(server);
  const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: "100", autoconvert: "EUR" });
  expect((await pay(server, m.apiKey, invoice.id, {})).body.status).toBe("completed");
  await adjust(server, m.id, "EUR", "10");
  await setRate("EUR", "1.25");
  return { m, invoice };
}

describe("a quote fixed at creation, static rates", () => {
  it("credits an autoconverted invoice at the rate of its creation after the operator changed it", async () => {
    const m = await feeFreeMerchant(server);
    const invoice = await createInvoice(server, m.apiKey, { currency: "ETH", amount: "0.5", autoconvert: "USDT" });
    await setRate("ETH", "4000");
    try {
      const paid = await pay(server, m.apiKey, invoice.id, {});
      expect(paid.status).toBe(200);
      expect(paid.body.status).toBe("completed");
      // 0.4995 ETH (0.5 less the 0.0005 network fee) at the creation rate 3000; at 4000 it would be 1998.
      expect((await balances(server, m.id)).USDT).toBe("1498.5");
      const quote = await merchant(server, m.apiKey, "GET", `/public/v1/invoices/${invoice.id}/quote`);
      expect(quote.status).toBe(200);
      expect(quote.body).toMatchObject({
        invoice_id: invoice.id,
        fixed: true,
        rates: [
          { currency: "ETH", rate_usd: "3000", source: "static", updated_at: null },
          { currency: "USDT", rate_usd: "1", source: "static", updated_at: null },
        ],
      });
      // Valued at the fixed 3000, with the live 4000 beside it.
      expect(quote.body.payments).toEqual([
        expect.objectContaining({
          amount: "0.5",
          confirmed: true,
          value_usd: "1500",
          live_rate_usd: "4000",
          live_value_usd: "2000",
        }),
      ]);
      // Another merchant's invoice is not there.
      const other = await feeFreeMerchant(server);
      expect((await merchant(server, other.apiKey, "GET", `/public/v1/invoices/${invoice.id}/quote`)).status).toBe(404);
    } finally {
      await setRate("ETH", "3000");
    }
  });

  it("refunds a crypto invoice in fiat at the rate of its creation", async () => {
    const { m, invoice } = await paidThenRateChanged();
    try {
      const { answer } = await refundFiat(server, m, { invoiceId: invoice.id });
      expect(answer.status, answer.text).toBe(200);
      // 100 USDT at the creation rate (EUR 1.08) is 92.592… → 92.59 EUR; at 1.25 it would be 80.
      expect(answer.body.request).toMatchObject({ currency: "EUR", amount: "92.59" });
    } finally {
      await setRate("EUR", "1.08");
    }
  });

  it("refunds a crypto invoice in fiat in parts at the rate of its creation, as the full refund does", async () => {
    const { m, invoice } = await paidThenRateChanged();
    try {
      // 50 EUR at the creation rate (EUR 1.08) takes 54 of the 100 USDT paid; at 1.25 it would take 62.5.
      const part = await createRefund(server, m, { invoiceId: invoice.id, type: "fiat", amount: "50" });
      expect(part.answer.status, part.answer.text).toBe(200);
      expect(part.answer.body.request).toMatchObject({ currency: "EUR", amount: "50" });
      // What is left, 46 USDT, is 42.59 EUR at the creation rate (36.8 at 1.25): the two parts are the
      // full refund's 92.59 EUR, and the second refunds all that was paid.
      const tooMuch = await createRefund(server, m, { invoiceId: invoice.id, type: "fiat", amount: "42.60" });
      expect(tooMuch.answer.status, tooMuch.answer.text).toBe(400);
      expect(tooMuch.answer.body.code).toBe("amount_exceeds_refundable");
      expect(tooMuch.answer.body.detail).toContain("42.59 EUR");
      const rest = await createRefund(server, m, { invoiceId: invoice.id, type: "fiat", amount: "42.59" });
      expect(rest.answer.status, rest.answer.text).toBe(200);
      expect(await invoiceStatus(server, m, invoice.id)).toBe("refund_processing");
    } finally {
      await setRate("EUR", "1.08");
    }
  });

  it("answers an unconfirmed payment without a value, and values it at confirmation", async () => {
    const m = await feeFreeMerchant(server);
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: "20" });
    expect((await pay(server, m.apiKey, invoice.id, { txId: "0xquote-1", confirmed: false })).status).toBe(200);
    let quote = await merchant(server, m.apiKey, "GET", `/public/v1/invoices/${invoice.id}/quote`);
    expect(quote.body.payments[0]).toMatchObject({ confirmed: false, value_usd: null, live_value_usd: null });
    expect((await pay(server, m.apiKey, invoice.id, { txId: "0xquote-1", confirmed: true })).status).toBe(200);
    quote = await merchant(server, m.apiKey, "GET", `/public/v1/invoices/${invoice.id}/quote`);
    expect(quote.body.payments[0]).toMatchObject({ confirmed: true, value_usd: "20", live_value_usd: "20" });
  });
});
