// A customer's deposit address page /d/{id} (product §30) on a live service against a local chain: the currency, the address with its EIP-681 URI and QR code, active or not, the latest deposits newest first and bounded; no merchant secrets nor another customer's data; 404 as a page; limited per client address like the other payer's pages.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PAGE_DEPOSITS } from "../../src/app/depositAddressPage.ts";
import { unauthenticatedSurface } from "../../src/http/unauthenticatedLimits.ts";
import { CONFIRMATIONS, type LiveFixture, mineAndScan, payer, startLiveFixture, usdt } from "../support/live.ts";
import { createMerchant, merchant } from "../support/server.ts";

const LIMIT = 30;
let live: LiveFixture;
let shop: { id: string; apiKey: string };

beforeAll(async () => {
  live = await startLiveFixture({ env: { PAYER_RATE_LIMIT_PER_MINUTE: String(LIMIT), TRUST_PROXY: "127.0.0.1" } });
  shop = await createMerchant(live.server, { merchantName: "Northwind Exchange", feePercent: "1" });
}, 60_000);
afterAll(async () => {
  await live?.server.close();
  await live?.chain.close();
});

async function depositAddress(customer: string, callbackUrl?: string) {
  const made = await merchant(live.server, shop.apiKey, "POST", "/public/v1/deposit-addresses", {
    customer,
    currency: "USDT",
    ...(callbackUrl === undefined ? {} : { callbackUrl }),
  });
  expect(made.status, made.text).toBe(200);
  return made.body as { id: string; address: `0x${string}` };
}

async function page(path: string, headers: Record<string, string> = {}) {
  const response = await fetch(`${live.server.baseUrl}${path}`, { headers });
  return { status: response.status, headers: response.headers, html: await response.text() };
}

/** The tx hashes the page lists, in its order. */
function listedHashes(html: string): string[] {
  return [...html.matchAll(/<code class="tx" title="(0x[0-9a-f]{64})"/g)].map((m) => m[1] as string);
}

describe("a customer's deposit address page", () => {
  it("shows the address, its URI and QR code, and the deposits newest first, in the payer's language, without the merchant's reference or callback", async () => {
    const callbackUrl = "https://hooks.example.com/deposits?token=merchant-secret";
    const mine = await depositAddress("customer-ref-7731", callbackUrl);
    const other = await depositAddress("customer-ref-9999");
    const from = payer(live.chain, 1);
    const first = await live.token.transfer(from, mine.address, usdt("12.5"));
    const second = await live.token.transfer(from, mine.address, usdt("3"));
    const stranger = await live.token.transfer(from, other.address, usdt("7"));
    await mineAndScan(live.server, live.chain, CONFIRMATIONS + 1);
    const shown = await page(`/d/${mine.id}`);
    expect(shown.status).toBe(200);
    expect(shown.headers.get("content-security-policy")).toContain("script-src 'self'");
    expect(shown.headers.get("x-frame-options")).toBe("DENY");
    expect(shown.headers.get("cache-control")).toBe("no-store");
    expect(shown.html).toContain("Your deposit address at Northwind Exchange");
    expect(shown.html).toContain(`<code data-address>${mine.address}</code>`);
    expect(shown.html).toContain('data-active="true"');
    const uri = `ethereum:${live.token.address}@${live.chain.chainId}/transfer?address=${mine.address}`;
    expect(shown.html).toContain(`data-uri="${uri}"`);
    expect(shown.html).toMatch(/<img class="qr" width="200" height="200" src="data:image\/svg\+xml;base64,/);
    expect(listedHashes(shown.html)).toEqual([second, first]);
    expect(shown.html).toContain("12.5 USDT");
    expect(shown.html).toContain("Credited");
    for (const hidden of ["customer-ref-7731", "merchant-secret", "hooks.example.com", stranger, other.address]) {
      expect(shown.html).not.toContain(hidden);
    }
    const french = await page(`/d/${mine.id}`, { "accept-language": "fr-FR,fr;q=0.9" });
    expect(french.html).toContain("Votre adresse de dépôt chez Northwind Exchange");
    expect(french.html).toContain("12,5 USDT");
    expect(french.headers.get("content-language")).toBe("fr");
  });

  it("says when the address is inactive, and shows at most the latest deposits", async () => {
    const mine = await depositAddress("customer-many");
    const from = payer(live.chain, 1);
    const hashes: string[] = [];
    for (let i = 1; i <= PAGE_DEPOSITS + 2; i++)
      hashes.push(await live.token.transfer(from, mine.address, usdt(String(i))));
    await mineAndScan(live.server, live.chain, CONFIRMATIONS + 1);
    const shown = await page(`/d/${mine.id}`);
    expect(listedHashes(shown.html)).toEqual(hashes.slice(-PAGE_DEPOSITS).reverse());
    const patched = await merchant(live.server, shop.apiKey, "PATCH", `/public/v1/deposit-addresses/${mine.id}`, {
      active: false,
    });
    expect(patched.status, patched.text).toBe(200);
    const inactive = await page(`/d/${mine.id}?lang=de`);
    expect(inactive.html).toContain('data-active="false"');
    expect(inactive.html).toContain("Inaktiv");
    expect(inactive.html).toContain("Northwind Exchange hat diese Adresse pausiert");
  });

  it("answers an unknown id with a 404 page, and bad ids by validation", async () => {
    const missing = await page("/d/no-such-address?lang=es");
    expect(missing.status).toBe(404);
    expect(missing.headers.get("content-type")).toContain("text/html");
    expect(missing.html).toContain("Dirección de depósito no encontrada");
    const tooLong = await fetch(`${live.server.baseUrl}/d/${"x".repeat(101)}`);
    expect(tooLong.status).toBe(400);
  });

  it("counts against the payer's per-address limit", async () => {
    const mine = await depositAddress("customer-limited");
    expect(unauthenticatedSurface("/d/:id")).toBe("payer");
    const headers = { "x-forwarded-for": "198.51.100.9" };
    const statuses = await Promise.all(
      Array.from(
        { length: LIMIT + 5 },
        async () => (await fetch(`${live.server.baseUrl}/d/${mine.id}`, { headers })).status,
      ),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(LIMIT);
    expect(statuses.filter((s) => s === 429)).toHaveLength(5);
    const browser = await page(`/d/${mine.id}`, { ...headers, accept: "text/html" });
    expect([browser.status, browser.headers.get("content-type")]).toEqual([429, "text/html; charset=utf-8"]);
  });
});
