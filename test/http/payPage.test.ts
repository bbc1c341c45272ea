// The payer's hosted page behind invoice_url: real HTML for real invoices, everything escaped, 404 otherwise.
import { beforeAll, describe, expect, it } from "vitest";
import { sandboxDepositAddress } from "../../src/domain/invoices.ts";
import { useTestServer } from "../support/fixture.ts";
import { createInvoice, pay } from "../support/invoices.ts";
import { createMerchant, merchant } from "../support/server.ts";

let m: { id: string; apiKey: string };

const server = useTestServer();
beforeAll(async () => {
  m = await createMerchant(server, { merchantName: "Shop & <Co>" });
});

async function page(url: string) {
  const response = await fetch(url);
  return { status: response.status, headers: response.headers, html: await response.text() };
}

async function storedDepositAddress(id: string): Promise<string | null> {
  const row = await server.ctx.store.db
    .selectFrom("invoices")
    .select("deposit_address")
    .where("id", "=", id)
    .executeTakeFirstOrThrow();
  return row.deposit_address;
}

describe("hosted invoice page", () => {
  it("shows amount, currency, status, expiry and the deposit address of a crypto invoice", async () => {
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: "100.5", order_no: "A-1" });
    const answer = await page(invoice.invoice_url);
    expect(answer.status).toBe(200);
    expect(answer.headers.get("content-type")).toMatch(/^text\/html; charset=utf-8/);
    expect(answer.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(answer.html).toMatch(/^<!doctype html>/);
    expect(answer.html).toContain("100.5 USDT");
    expect(answer.html).toContain("Awaiting payment");
    expect(answer.html).toContain(`datetime="${invoice.expires_at}"`);
    const address = await storedDepositAddress(invoice.id);
    expect(address).toBe(sandboxDepositAddress(invoice.id));
    expect(address).toMatch(/^0x[0-9a-f]{40}$/);
    expect(answer.html).toContain(`<code data-address>${address}</code>`);
    // Deterministic: the same invoice always shows the same address.
    expect((await page(invoice.invoice_url)).html).toContain(`<code data-address>${address}</code>`);
    expect(answer.html).toContain("Shop &amp; &lt;Co&gt;");
  });

  it("follows the invoice as it is paid", async () => {
    const invoice = await createInvoice(server, m.apiKey, {
      currency: "ETH",
      amount: "0.3",
      success_url: "https://shop.example/thanks?a=1&b=2",
    });
    await pay(server, m.apiKey, invoice.id, { amount: "0.1", confirmed: false });
    const partly = await page(invoice.invoice_url);
    // Partly paid: the page says what is still due and asks for it (not "awaiting confirmations").
    expect(partly.html).toContain("Partly paid: 0.1 ETH of 0.3 ETH received. Please pay the remaining 0.2 ETH.");
    expect(partly.html).not.toContain("Payment received, awaiting confirmations");
    expect(partly.html).toContain("<dt>Still due</dt>");
    expect(partly.html).toContain("0 of 12 confirmations");
    expect(partly.html).toContain("0.1 ETH");
    expect(partly.html).toContain("0.2 ETH");
    await pay(server, m.apiKey, invoice.id, { amount: "0.2" });
    await pay(server, m.apiKey, invoice.id, { txId: (await firstTxId(invoice.id)) ?? "" });
    const paid = await page(invoice.invoice_url);
    expect(paid.html).toContain("Paid. Thank you!");
    expect(paid.html).toContain("12 of 12 confirmations");
    expect(paid.html).toContain('href="https://shop.example/thanks?a=1&amp;b=2"');
  });

  it("asks for what is still due after a partial payment, in every language, confirmed or not", async () => {
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: "49.9" });
    await pay(server, m.apiKey, invoice.id, { amount: "20" });
    const expected = {
      en: ["Partly paid: 20 USDT of 49.9 USDT received. Please pay the remaining 29.9 USDT.", "Still due"],
      fr: ["Paiement partiel : 20 USDT reçus sur 49,9 USDT. Veuillez payer les 29,9 USDT restants.", "Reste à payer"],
      es: ["Pago parcial: se recibieron 20 USDT de 49,9 USDT. Pague los 29,9 USDT restantes.", "Pendiente de pago"],
      de: [
        "Teilweise bezahlt: 20 USDT von 49,9 USDT erhalten. Bitte zahlen Sie die restlichen 29,9 USDT.",
        "Noch offen",
      ],
    };
    for (const [lang, [sentence, label]] of Object.entries(expected)) {
      const answer = await page(`${invoice.invoice_url}?lang=${lang}`);
      const statusLine = /<p class="status[^"]*"[^>]*data-partial>([^<]*)<\/p>/.exec(answer.html)?.[1];
      expect(statusLine, lang).toBe(sentence);
      expect(answer.html).toContain(`<dt>${label}</dt>`);
    }
    // Paid in full but unconfirmed: no longer partial, it waits for confirmations.
    const whole = await createInvoice(server, m.apiKey, { currency: "USDT", amount: "10" });
    await pay(server, m.apiKey, whole.id, { confirmed: false });
    const waiting = await page(whole.invoice_url);
    expect(waiting.html).toContain("Payment received, awaiting confirmations");
    expect(waiting.html).not.toContain("data-partial");
  });

  it("has no deposit address for a fiat invoice, which is paid by card", async () => {
    const invoice = await createInvoice(server, m.apiKey, { currency: "EUR", amount: 12 });
    expect(await storedDepositAddress(invoice.id)).toBeNull();
    const answer = await page(invoice.invoice_url);
    expect(answer.status).toBe(200);
    expect(answer.html).toContain("12 EUR");
    expect(answer.html).toContain("paid by card");
    expect(answer.html).not.toContain("qr.svg");
    expect(answer.html).not.toMatch(/0x[0-9a-f]{40}/);
  });

  it("escapes everything the merchant wrote", async () => {
    const invoice = await createInvoice(server, m.apiKey, {
      currency: "USDT",
      amount: 10,
      description: `<script>alert("x")</script> & 'quotes'`,
      order_no: `"><img src=x onerror=alert(1)>`,
      return_url: "https://shop.example/back?q='a'&b=1",
    });
    const { html } = await page(invoice.invoice_url);
    expect(html).not.toContain("<script>");
    expect(html).not.toContain("<img src=x");
    expect(html).toContain("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;quotes&#39;");
    expect(html).toContain("&quot;&gt;&lt;img src=x onerror=alert(1)&gt;");
    expect(html).toContain('href="https://shop.example/back?q=&#39;a&#39;&amp;b=1"');
    // A URL that would break out of the attribute is not even accepted.
    const hostile = await merchant(server, m.apiKey, "POST", "/public/v1/invoices/create", {
      currency: "USDT",
      amount: 10,
      return_url: `https://shop.example/"><script>alert(2)</script>`,
    });
    expect(hostile.status).toBe(400);
  });

  it("answers 404 for an unknown invoice", async () => {
    const answer = await page(`${server.baseUrl}/pay/00000000-0000-4000-8000-000000000000`);
    expect(answer.status).toBe(404);
    expect(answer.headers.get("content-type")).toMatch(/^text\/html/);
    expect(answer.html).toContain("Invoice not found");
  });
});

async function firstTxId(invoiceId: string): Promise<string | undefined> {
  const rows = await server.ctx.store.db
    .selectFrom("invoice_payments")
    .select(["tx_id", "confirmed"])
    .where("invoice_id", "=", invoiceId)
    .where("confirmed", "=", 0)
    .execute();
  return rows[0]?.tx_id;
}
