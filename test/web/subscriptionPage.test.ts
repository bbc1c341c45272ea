// The subscription's page in Chromium (product §29): its status and open invoice, and, with an injected EIP-1193 wallet backed by an anvil account, the next periods' renewals signed one by one and stored; screenshots.
import { mkdir, writeFile } from "node:fs/promises";
import { AxeBuilder } from "@axe-core/playwright";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuthorizationToken } from "../support/chain.ts";
import { type InjectedWallet, type InjectedWalletOptions, injectWallet } from "../support/injectedWallet.ts";
import { payer, usdtEntry, useLiveFixture } from "../support/live.ts";
import { admin, merchant as asMerchant, createMerchant } from "../support/server.ts";
import { signedCall } from "../support/signing.ts";
import { payerAccount } from "../support/walletPayments.ts";
import { launchChromium } from "./browser.ts";

const OUT = new URL("../../docs/screenshots/pay/", import.meta.url);
const UPDATE = process.env.UPDATE_SCREENSHOTS === "1";
const PAYER = 1;

const live = useLiveFixture();
let usdc: AuthorizationToken;
let browser: Browser;
let merchant: { id: string; apiKey: string; secretKey: string };
const thirdParty: string[] = [];

beforeAll(async () => {
  const { chain, server } = live;
  usdc = await chain.deployAuthorizationToken();
  const entry = usdtEntry(usdc, {
    fullName: "USD Coin",
    icon: "/icons/usdc.svg",
    iconDark: "/icons/usdc-dark.svg",
    internalTicker: "USDC_ERC20",
    authorization: { kind: "eip3009", ...usdc.eip712 },
  });
  expect((await admin(server, "PUT", "/currencies/USDC", entry)).status).toBe(200);
  await usdc.mint(payer(chain, PAYER), 1_000_000_000n);
  merchant = await createMerchant(server, { merchantName: "Northwind Coffee", feePercent: "0" });
  browser = await launchChromium();
  if (UPDATE) await mkdir(OUT, { recursive: true });
}, 120_000);
afterAll(async () => {
  await browser?.close();
});

/** A monthly USDC plan and a customer on it: its first invoice is open at once. */
async function subscription(): Promise<{ id: string; url: string; openInvoice: { id: string } }> {
  const plan = await asMerchant(live.server, merchant.apiKey, "POST", "/public/v1/plans", {
    name: "Beans, monthly",
    currency: "USDC",
    amount: "12.50",
    interval: "month",
  });
  expect(plan.status, plan.text).toBe(200);
  const { answer } = await signedCall(live.server.baseUrl, {
    apiKey: merchant.apiKey,
    secret: merchant.secretKey,
    path: "/public/v1/subscriptions",
    body: { planId: plan.body.id, customer: { reference: "cust-42" } },
  });
  expect(answer.status, answer.text).toBe(200);
  return answer.body;
}

/** A phone-sized page with the payer's wallet injected (none when `wallet` is null), its errors and other-origin requests recorded. */
async function open(
  url: string,
  wallet: Partial<InjectedWalletOptions> | null,
): Promise<{ context: BrowserContext; page: Page; errors: string[]; wallet: InjectedWallet | null }> {
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, locale: "en-US" });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on("console", (msg) => {
    if (msg.type() === "error") errors.push(msg.text());
  });
  page.on("pageerror", (error) => errors.push(error.message));
  page.on("request", (request) => {
    if (!request.url().startsWith(live.server.baseUrl) && !request.url().startsWith("data:")) {
      thirdParty.push(request.url());
    }
  });
  const injected =
    wallet === null
      ? null
      : await injectWallet(page, {
          rpcUrl: live.chain.url,
          chainId: live.chain.chainId,
          account: payerAccount(live.chain, PAYER),
          ...wallet,
        });
  await page.goto(url);
  return { context, page, errors, wallet: injected };
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

const status = (page: Page) => page.locator("[data-wallet-status]");

describe("the subscription's page in Chromium", () => {
  it("pre-authorizes the next three periods by three signatures, no gas, and lists them", async () => {
    const sub = await subscription();
    const payerEth = await live.chain.balance(payer(live.chain, PAYER));
    const { context, page, errors, wallet } = await open(sub.url, { discovery: "eip6963" });
    try {
      const button = page.getByRole("button", { name: "Pre-authorize with wallet" });
      await button.waitFor();
      expect(await page.locator("[data-open-invoice]").getAttribute("data-open-invoice")).toBe(sub.openInvoice.id);
      expect(await page.getByRole("link", { name: "Pay this invoice" }).getAttribute("href")).toContain(
        `/pay/${sub.openInvoice.id}`,
      );
      expect(await seriousViolations(page)).toEqual([]);
      await shot(page, "subscription-ready-390x844");
      await page.setViewportSize({ width: 1280, height: 900 });
      await shot(page, "subscription-ready-1280x900");
      await page.setViewportSize({ width: 390, height: 844 });
      await page.getByLabel("Periods to pre-authorize").selectOption("3");
      await button.click();
      await expect.poll(() => status(page).textContent()).toBe("3 renewals pre-authorized.");
      expect(wallet?.calls).toEqual([
        "eth_requestAccounts",
        "eth_chainId",
        "eth_signTypedData_v4",
        "eth_signTypedData_v4",
        "eth_signTypedData_v4",
      ]);
      const listed = page.locator("[data-renewals] li");
      expect(await listed.evaluateAll((items) => items.map((i) => i.getAttribute("data-period")))).toEqual([
        "2",
        "3",
        "4",
      ]);
      expect(await listed.first().textContent()).toContain("signed: paid when its invoice is made");
      expect(await seriousViolations(page)).toEqual([]);
      await shot(page, "subscription-preauthorized-390x844");
      const stored = await live.server.ctx.store.db
        .selectFrom("renewal_authorizations")
        .select(["period", "state"])
        .where("subscription_id", "=", sub.id)
        .orderBy("period")
        .execute();
      expect(stored.map((r) => [Number(r.period), r.state])).toEqual([
        [2, "signed"],
        [3, "signed"],
        [4, "signed"],
      ]);
      // Signing costs the payer nothing.
      expect(await live.chain.balance(payer(live.chain, PAYER))).toBe(payerEth);
      expect(errors).toEqual([]);
      expect(thirdParty).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("is the page with its status and open invoice only without a wallet, and says so when the payer declines", async () => {
    const sub = await subscription();
    const bare = await open(sub.url, null);
    try {
      await bare.page.locator('[data-renewal-wallet][data-found="none"]').waitFor({ state: "attached" });
      expect(await bare.page.locator("[data-renewal-wallet]").isVisible()).toBe(false);
      expect(await bare.page.getByRole("link", { name: "Pay this invoice" }).isVisible()).toBe(true);
      expect(bare.errors).toEqual([]);
    } finally {
      await bare.context.close();
    }
    const declining = await open(sub.url, { decline: ["eth_signTypedData_v4"] });
    try {
      await declining.page.getByRole("button", { name: "Pre-authorize with wallet" }).click();
      await declining.page.locator(".wallet-error").waitFor();
      expect(await status(declining.page).textContent()).toBe("You declined in your wallet. Nothing was signed.");
      await shot(declining.page, "subscription-declined-390x844");
    } finally {
      await declining.context.close();
    }
    const stored = await live.server.ctx.store.db
      .selectFrom("renewal_authorizations")
      .select("id")
      .where("subscription_id", "=", sub.id)
      .execute();
    expect(stored).toEqual([]);
  });
});
