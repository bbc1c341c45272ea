// A customer's deposit address page /d/{id} in Chromium (product §30), its address on two local chains (ethereum and base): a QR code per network, the copy button, the deposits seen newest first, the inactive notice and the 404 page; no serious axe violation, nothing from another origin; UPDATE_SCREENSHOTS=1 writes deposit-address*.png.
import { mkdir, writeFile } from "node:fs/promises";
import { AxeBuilder } from "@axe-core/playwright";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalChain, startLocalChain, type TestToken } from "../support/chain.ts";
import { CONFIRMATIONS, deployServiceFactory, payer, scan, startLiveServer, usdt, usdtEntry } from "../support/live.ts";
import { admin, createMerchant, merchant, type TestServer } from "../support/server.ts";
import { launchChromium } from "./browser.ts";

const OUT = new URL("../../docs/screenshots/pay/", import.meta.url);
const UPDATE = process.env.UPDATE_SCREENSHOTS === "1";

let mainnet: LocalChain;
let base: LocalChain;
let tokenMain: TestToken;
let tokenBase: TestToken;
let server: TestServer;
let browser: Browser;
let shop: { id: string; apiKey: string };
const thirdParty: string[] = [];

beforeAll(async () => {
  [mainnet, base] = await Promise.all([startLocalChain({ chainId: 1 }), startLocalChain({ chainId: 8453 })]);
  [tokenMain, tokenBase] = await Promise.all([mainnet.deployToken(), base.deployToken()]);
  server = await startLiveServer(mainnet, tokenMain);
  const network = await admin(server, "PUT", "/networks/base", {
    chainId: 8453,
    rpcUrl: base.url,
    confirmations: CONFIRMATIONS,
  });
  expect(network.status, network.text).toBe(200);
  await deployServiceFactory(server, base, "base");
  const entry = await admin(
    server,
    "PUT",
    "/currencies/USDT_BASE",
    usdtEntry(tokenBase, { ticker: "USDT", network: "base", internalTicker: "USDT_BASE" }),
  );
  expect(entry.status, entry.text).toBe(200);
  await Promise.all([tokenMain.mint(payer(mainnet, 1), usdt("1000")), tokenBase.mint(payer(base, 1), usdt("1000"))]);
  shop = await createMerchant(server, { merchantName: "Northwind Exchange", feePercent: "1" });
  await scan(server);
  browser = await launchChromium();
  if (UPDATE) await mkdir(OUT, { recursive: true });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
  await Promise.all([mainnet?.close(), base?.close()]);
});

async function depositAddress(customer: string): Promise<{ id: string; address: `0x${string}` }> {
  const made = await merchant(server, shop.apiKey, "POST", "/public/v1/deposit-addresses", {
    customer,
    currency: "USDT",
  });
  expect(made.status, made.text).toBe(200);
  expect(made.body.networks).toEqual(["ethereum", "base"]);
  return made.body;
}

async function mineBothAndScan(blocks: number): Promise<void> {
  await Promise.all([mainnet.mine(blocks), base.mine(blocks)]);
  for (let i = 0; i < 10; i++) if ((await scan(server)) === 0) return;
}

async function open(path: string): Promise<{ context: BrowserContext; page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, locale: "en-US" });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.baseUrl });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on("console", (msg) => {
    if (msg.type() === "error") errors.push(msg.text());
  });
  page.on("pageerror", (error) => errors.push(error.message));
  page.on("request", (request) => {
    if (!request.url().startsWith(server.baseUrl) && !request.url().startsWith("data:")) {
      thirdParty.push(request.url());
    }
  });
  await page.goto(`${server.baseUrl}${path}`);
  return { context, page, errors };
}

async function shot(page: Page, name: string): Promise<void> {
  const png = await page.screenshot({ fullPage: true });
  expect(png.byteLength).toBeGreaterThan(1000);
  if (UPDATE) await writeFile(new URL(`${name}.png`, OUT), png);
}

async function seriousViolations(page: Page): Promise<string[]> {
  const results = await new AxeBuilder({ page }).analyze();
  return results.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}

describe("a customer's deposit address page in Chromium", () => {
  it("shows a QR code per network, copies the address, and lists the deposits newest first", async () => {
    const mine = await depositAddress("customer-42");
    // Seen one after the other (one scan records a batch at one instant, whatever its network).
    await tokenMain.transfer(payer(mainnet, 1), mine.address, usdt("250"));
    await mineBothAndScan(CONFIRMATIONS + 1);
    await tokenBase.transfer(payer(base, 1), mine.address, usdt("40.5"));
    await mineBothAndScan(CONFIRMATIONS + 1);
    await tokenMain.transfer(payer(mainnet, 1), mine.address, usdt("12"));
    await mineBothAndScan(1);
    const { context, page, errors } = await open(`/d/${mine.id}`);
    try {
      await page.getByRole("heading", { name: "Your deposit address at Northwind Exchange" }).waitFor();
      const qrs = page.getByRole("img", { name: /QR code of this address on/ });
      expect(await qrs.count()).toBe(2);
      for (const qr of await qrs.all()) {
        // Drawn: an SVG the browser decoded to its size.
        expect(await qr.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth)).toBeGreaterThan(
          0,
        );
      }
      expect(
        await page.locator("[data-network]").evaluateAll((els) => els.map((e) => e.getAttribute("data-network"))),
      ).toEqual(["ethereum", "base"]);
      const rows = page.locator(".deposit-list li");
      expect(
        await rows.evaluateAll((trs) =>
          trs.map((tr) => [tr.querySelector(".amount")?.textContent, tr.getAttribute("data-status")]),
        ),
      ).toEqual([
        ["12 USDT", "pending"],
        ["40.5 USDT", "completed"],
        ["250 USDT", "completed"],
      ]);
      expect(await seriousViolations(page)).toEqual([]);
      await shot(page, "deposit-address-390x844");
      await page.setViewportSize({ width: 1280, height: 900 });
      await shot(page, "deposit-address-1280x900");
      await page.getByRole("button", { name: "Copy address" }).click();
      await expect.poll(() => page.evaluate("navigator.clipboard.readText()")).toBe(mine.address);
      expect(errors).toEqual([]);
      expect(thirdParty).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("says an inactive address holds what it receives, shows a new address's empty list, and answers an unknown id with a page", async () => {
    const paused = await depositAddress("customer-paused");
    const patched = await merchant(server, shop.apiKey, "PATCH", `/public/v1/deposit-addresses/${paused.id}`, {
      active: false,
    });
    expect(patched.status, patched.text).toBe(200);
    const inactive = await open(`/d/${paused.id}?lang=fr`);
    try {
      await inactive.page.locator('[data-active="false"]').waitFor();
      expect(await inactive.page.getByRole("note").textContent()).toContain(
        "Northwind Exchange a suspendu cette adresse",
      );
      expect(await inactive.page.locator('[data-deposits="none"]').textContent()).toContain("Aucun dépôt");
      expect(await seriousViolations(inactive.page)).toEqual([]);
      await shot(inactive.page, "deposit-address-inactive-390x844");
      expect(inactive.errors).toEqual([]);
    } finally {
      await inactive.context.close();
    }
    const missing = await open("/d/no-such-address");
    try {
      expect(await missing.page.getByRole("heading").textContent()).toBe("Deposit address not found");
      expect(await seriousViolations(missing.page)).toEqual([]);
    } finally {
      await missing.context.close();
    }
  });
});
