// The payer's page stays small: its HTML, script and style as served weigh under 100 KiB together.
import { describe, expect, it } from "vitest";
import { useTestServer } from "../support/fixture.ts";
import { createInvoice, pay } from "../support/invoices.ts";
import { createMerchant } from "../support/server.ts";

const server = useTestServer();

async function bytes(url: string): Promise<number> {
  const response = await fetch(url);
  expect(response.status).toBe(200);
  return (await response.arrayBuffer()).byteLength;
}

describe("page weight", () => {
  it("is under 100 KiB for HTML + JS + CSS, with payments listed", async () => {
    const m = await createMerchant(server, { merchantName: "Northwind Coffee" });
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: "100" });
    for (let i = 0; i < 5; i += 1) await pay(server, m.apiKey, invoice.id, { amount: "1", confirmed: false });
    const html = await (await fetch(invoice.invoice_url)).text();
    const assets = [...html.matchAll(/(?:src|href)="(\/pay\/assets\/[^"]+)"/g)].map((match) => match[1] ?? "");
    expect(assets.sort()).toEqual(["/pay/assets/pay.css", "/pay/assets/pay.js"]);
    let total = Buffer.byteLength(html);
    for (const path of assets) total += await bytes(`${server.baseUrl}${path}`);
    expect(total).toBeGreaterThan(5000);
    expect(total).toBeLessThan(100 * 1024);
  });

  it("hides the service's own brand for a whitelabeled merchant", async () => {
    const plain = await createMerchant(server, { merchantName: "Plain" });
    const white = await createMerchant(server, { merchantName: "White", whitelabeling: true });
    const a = await createInvoice(server, plain.apiKey, { currency: "USDT", amount: "50" });
    const b = await createInvoice(server, white.apiKey, { currency: "USDT", amount: "50" });
    expect(await (await fetch(a.invoice_url)).text()).toContain("<footer>");
    expect(await (await fetch(b.invoice_url)).text()).not.toContain("<footer>");
  });
});
