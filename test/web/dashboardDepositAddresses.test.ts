// The dashboard's deposit addresses page in headless Chromium (product §30), a live service on a local chain: customers' addresses listed, one created in the form, filtered by customer, deactivated and activated, an address's deposits with their status, amounts, fees and transaction, and a held one refunded by claim link; audited; UPDATE_SCREENSHOTS=1 writes deposit-addresses*.png.

import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { AxeBuilder } from "@axe-core/playwright";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { PASSWORD } from "../support/dashboard.ts";
import { CONFIRMATIONS, type LiveFixture, mineAndScan, payer, startLiveFixture, usdt } from "../support/live.ts";
import { admin, createMerchant, merchant } from "../support/server.ts";
import { launchChromium, SCREENSHOTS, SHOT_DIR, shots } from "./browser.ts";

let live: LiveFixture;
let browser: Browser;

beforeAll(async () => {
  // The dashboard's assets come from the global setup (see useDashboardBrowser).
  live = await startLiveFixture();
  browser = await launchChromium();
  if (SCREENSHOTS) mkdirSync(SHOT_DIR, { recursive: true });
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await live?.server.close();
  await live?.chain.close();
});

async function seriousViolations(page: Page): Promise<string[]> {
  const results = await new AxeBuilder({ page }).analyze();
  return results.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}

/** Two customers' addresses, one with a credited and a confirming deposit. */
async function customers(shop: { apiKey: string }) {
  const make = async (customer: string) => {
    const made = await merchant(live.server, shop.apiKey, "POST", "/public/v1/deposit-addresses", {
      customer,
      currency: "USDT",
    });
    expect(made.status, made.text).toBe(200);
    return made.body as { id: string; address: `0x${string}` };
  };
  const alice = await make("alice-1001");
  await make("bob-2002");
  const from = payer(live.chain, 1);
  const credited = await live.token.transfer(from, alice.address, usdt("250"));
  await mineAndScan(live.server, live.chain, CONFIRMATIONS + 1);
  const confirming = await live.token.transfer(from, alice.address, usdt("12"));
  await mineAndScan(live.server, live.chain, 0);
  return { alice, credited, confirming };
}

it("lists, creates, filters, deactivates and activates addresses, and shows an address's deposits", {
  timeout: 120_000,
}, async () => {
  const shop = await createMerchant(live.server, { merchantName: "Northwind Exchange", feePercent: "1" });
  const { alice, credited, confirming } = await customers(shop);
  const email = `owner-${randomBytes(4).toString("hex")}@northwind.example`;
  const invited = await admin(live.server, "POST", `/merchants/${shop.id}/users`, { email, role: "owner" });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const foreign: string[] = [];
  page.on("request", (request) => {
    if (!request.url().startsWith(live.server.baseUrl) && !request.url().startsWith("data:"))
      foreign.push(request.url());
  });
  await page.goto(invited.body.inviteUrl.replace(live.server.config.publicBaseUrl, live.server.baseUrl));
  await page.getByLabel("New password").fill(PASSWORD);
  await page.getByRole("button", { name: "Set password" }).click();
  await page.getByRole("heading", { name: "Overview" }).waitFor();
  await page.getByRole("link", { name: "Deposit addresses" }).click();

  const addresses = page.getByRole("table", { name: "Deposit addresses" });
  await addresses.getByRole("cell", { name: "alice-1001", exact: true }).waitFor();
  expect(await addresses.locator("tbody tr").count()).toBe(2);
  expect(await addresses.getByRole("link", { name: "Payer's page" }).first().getAttribute("href")).toMatch(/^\/d\//);

  // An address's deposits: the confirming one first, then the credited one with its fees.
  await page.getByRole("button", { name: "Deposits of alice-1001 in USDT" }).click();
  const deposits = page.getByRole("table", { name: "Deposits of alice-1001 in USDT" });
  await deposits.locator("tbody tr").nth(1).waitFor();
  expect(await deposits.locator(".badge").allTextContents()).toEqual(["pending", "completed"]);
  const creditedRow = deposits.locator("tbody tr").nth(1);
  expect(await creditedRow.textContent()).toContain("250 USDT");
  expect(await creditedRow.textContent()).toContain("2.5 + 1 network");
  expect(await creditedRow.textContent()).toContain("246.5");
  expect(await creditedRow.locator("code").first().getAttribute("title")).toBe(credited);
  expect(await deposits.locator("tbody tr").first().locator("code").first().getAttribute("title")).toBe(confirming);
  expect(await seriousViolations(page)).toEqual([]);
  await shots(page, "deposit-addresses");

  // One made in the form, then the customer filter.
  await page.getByRole("button", { name: "Create address" }).click();
  const form = page.getByRole("form", { name: "Create a deposit address" });
  await form.getByLabel("Customer (your reference)").fill("carol-3003");
  await form.getByRole("button", { name: "Create address" }).click();
  await addresses.getByRole("cell", { name: "carol-3003", exact: true }).waitFor();
  await page.getByText(/^carol-3003's USDT address: 0x/).waitFor();
  await page.getByLabel("Customer", { exact: true }).fill("alice-1001");
  await page.getByRole("button", { name: "Filter" }).click();
  await expect.poll(() => addresses.locator("tbody tr").count()).toBe(1);

  // Deactivate, then activate again.
  await page.getByRole("button", { name: "Deactivate alice-1001's USDT address" }).click();
  await page.getByText("alice-1001's USDT address is inactive: its transfers are held for your decision.").waitFor();
  expect(await addresses.locator(".badge").allTextContents()).toEqual(["inactive"]);
  expect(await seriousViolations(page)).toEqual([]);
  await shots(page, "deposit-addresses-inactive");

  // A transfer to the inactive address is held, and so is the one still confirming when it was
  // deactivated (decided at confirmation); the owner refunds the newest by claim link, shown once.
  await live.token.transfer(payer(live.chain, 1), alice.address, usdt("40"));
  await mineAndScan(live.server, live.chain, CONFIRMATIONS + 1);
  await page.getByRole("button", { name: "Deposits of alice-1001 in USDT" }).click();
  await expect.poll(() => deposits.locator(".badge").allTextContents()).toEqual(["held", "held", "completed"]);
  await deposits
    .getByRole("button", { name: /^Refund deposit / })
    .first()
    .click();
  await page.getByText(/^Send this link to the payer of deposit .+; it is shown only now:/).waitFor();
  expect(await page.locator("p.note code").textContent()).toMatch(/\/refund\/[^/]+$/);
  expect(await deposits.locator(".badge").first().textContent()).toBe("refunded");
  expect(await deposits.locator("tbody tr").first().textContent()).toContain("refund 39 awaiting claim");
  expect(await seriousViolations(page)).toEqual([]);
  await shots(page, "deposit-addresses-refund");
  await page.getByRole("button", { name: "Activate alice-1001's USDT address" }).click();
  await page.getByText("alice-1001's USDT address is active: its transfers are credited.").waitFor();

  const stored = await merchant(live.server, shop.apiKey, "GET", `/public/v1/deposit-addresses/${alice.id}`);
  expect(stored.body.active).toBe(true);
  await page.getByRole("link", { name: "Audit log" }).click();
  for (const action of [
    "deposit_address.create",
    "deposit_address.deactivate",
    "deposit.refund",
    "deposit_address.activate",
  ]) {
    await page.getByRole("cell", { name: action, exact: true }).waitFor();
  }
  expect(foreign).toEqual([]);
  await context.close();
});
