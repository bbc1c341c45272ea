// The dashboard's overview of a ticker on several networks (product §23) in headless Chromium: each ticker's total with its networks' parts; a ticker on one network shows its total alone, as before.
import { randomBytes } from "node:crypto";
import { expect, it } from "vitest";
import { PASSWORD } from "../support/dashboard.ts";
import { adjust } from "../support/refunds.ts";
import { admin, createMerchant } from "../support/server.ts";
import { useDashboardBrowser } from "./browser.ts";

const { server, browser } = useDashboardBrowser();

it("shows USDT's total over Ethereum and Base with each network's part, and ETH alone", async () => {
  const entry = await admin(server, "PUT", "/currencies/USDT_BASE", {
    ticker: "USDT",
    internalTicker: "USDT_BASE",
    network: "base",
    contractAddress: "0xfde4C96c8593536E31F229EA8f37b2ADa2699bb2",
    type: "stablecoin",
    fullName: "Tether USD",
    icon: "/icons/usdt.svg",
    iconDark: "/icons/usdt-dark.svg",
    decimals: 6,
    networkFee: "0.5",
    withdrawalMin: "10",
    withdrawalMax: "100000",
    rateUsd: "1",
  });
  expect(entry.status, entry.text).toBe(200);
  const shop = await createMerchant(server, { merchantName: "Two Networks" });
  await adjust(server, shop.id, "USDT_ERC20", "100.25");
  await adjust(server, shop.id, "USDT_BASE", "40.5");
  await adjust(server, shop.id, "ETH", "0.5");

  const email = `owner-${randomBytes(4).toString("hex")}@acme.example`;
  const invited = await admin(server, "POST", `/merchants/${shop.id}/users`, { email, role: "owner" });
  expect(invited.status, invited.text).toBe(200);
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  try {
    const page = await context.newPage();
    await page.goto(invited.body.inviteUrl.replace(server.config.publicBaseUrl, server.baseUrl));
    await page.getByLabel("New password").fill(PASSWORD);
    await page.getByRole("button", { name: "Set password" }).click();
    await page.getByRole("heading", { name: "Overview" }).waitFor();
    const usdt = page.locator(".tile", { has: page.getByText("USDT", { exact: true }) });
    await usdt.locator("strong").waitFor();
    expect(await usdt.locator("strong").textContent()).toBe("140.75");
    expect(await usdt.getByRole("list", { name: "USDT by network" }).locator("li").allTextContents()).toEqual([
      "ethereum: 100.25",
      "base: 40.5",
    ]);
    const eth = page.locator(".tile", { has: page.getByText("ETH", { exact: true }) });
    expect(await eth.locator("strong").textContent()).toBe("0.5");
    expect(await eth.locator(".tile-networks").count()).toBe(0);
    // Every ticker once.
    const tickers = await page.locator(".tile > span.muted").allTextContents();
    expect(tickers.filter((t) => t === "USDT")).toEqual(["USDT"]);
  } finally {
    await context.close();
  }
});
