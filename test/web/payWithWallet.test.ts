// "Pay with wallet" in Chromium (issue 45): an injected EIP-1193 wallet backed by an anvil account pays an EIP-3009 invoice by one signature and a Permit2 (USDT-like) invoice by approval + signature; the invoices complete; screenshots.
import { mkdir, writeFile } from "node:fs/promises";
import { AxeBuilder } from "@axe-core/playwright";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { erc20Abi, type Hex, maxUint256, parseEther } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PERMIT2_ADDRESS } from "../../src/domain/walletAuthorizationAbi.ts";
import type { AuthorizationToken } from "../support/chain.ts";
import { type InjectedWallet, type InjectedWalletOptions, injectWallet } from "../support/injectedWallet.ts";
import { CONFIRMATIONS, getInvoice, liveInvoice, outboxOf, payer, usdtEntry, useLiveFixture } from "../support/live.ts";
import { admin, createMerchant } from "../support/server.ts";
import { payerAccount } from "../support/walletPayments.ts";
import { launchChromium } from "./browser.ts";

const OUT = new URL("../../docs/screenshots/pay/", import.meta.url);
const UPDATE = process.env.UPDATE_SCREENSHOTS === "1";
const PAYER = 1;

const live = useLiveFixture();
let usdc: AuthorizationToken;
let browser: Browser;
let merchant: { id: string; apiKey: string };
const thirdParty: string[] = [];

beforeAll(async () => {
  const { chain, server, token } = live;
  usdc = await chain.deployAuthorizationToken();
  await chain.installPermit2();
  const usdcEntry = usdtEntry(usdc, {
    fullName: "USD Coin",
    icon: "/icons/usdc.svg",
    iconDark: "/icons/usdc-dark.svg",
    internalTicker: "USDC_ERC20",
    authorization: { kind: "eip3009", ...usdc.eip712 },
  });
  expect((await admin(server, "PUT", "/currencies/USDC", usdcEntry)).status).toBe(200);
  const usdt = await admin(server, "PUT", "/currencies/USDT", usdtEntry(token, { authorization: { kind: "permit2" } }));
  expect(usdt.status).toBe(200);
  await usdc.mint(payer(chain, PAYER), 1_000_000_000n);
  // The hot wallet pays the submissions' gas; the payer pays none for EIP-3009.
  await chain.waitForReceipt(await chain.sendEth(payer(chain, 3), hotWallet(), parseEther("1")));
  merchant = await createMerchant(server, { merchantName: "Northwind Coffee", feePercent: "0" });
  browser = await launchChromium();
  if (UPDATE) await mkdir(OUT, { recursive: true });
}, 120_000);
afterAll(async () => {
  await browser?.close();
});

function hotWallet(): Hex {
  const hot = live.server.ctx.wallet?.hotAddress;
  if (!hot) throw new Error("the live server has no wallet");
  return hot;
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

/** Passes of the hot wallet's worker and blocks until the submissions are deep and settled (bounded), then screening. */
async function submitAndSettle(): Promise<void> {
  const loop = live.server.workers.loops.chainPayouts;
  if (!loop) throw new Error("no chain payout loop");
  await loop.runOnce();
  for (let i = 0; i < 4; i++) {
    await live.chain.mine(CONFIRMATIONS);
    await loop.runOnce();
  }
  await live.server.workers.loops.screening?.runOnce();
}

const status = (page: Page) => page.locator("[data-wallet-status]");

describe("paying with a wallet in Chromium", () => {
  it("pays an EIP-3009 invoice by one signature: no approval, no gas for the payer, completed live", async () => {
    const invoice = await liveInvoice(live.server, merchant.apiKey, {
      currency: "USDC",
      amount: "10",
      order_no: "W-1",
    });
    const payerEth = await live.chain.balance(payer(live.chain, PAYER));
    const hotBefore = await usdc.balanceOf(hotWallet());
    const { context, page, errors, wallet } = await open(invoice.invoice_url, { discovery: "eip6963" });
    try {
      const button = page.getByRole("button", { name: "Pay with wallet" });
      await button.waitFor();
      expect(await page.locator(".wallet .hint").textContent()).toBe(
        "One signature in your browser wallet; you pay no network fee.",
      );
      expect(await seriousViolations(page)).toEqual([]);
      await shot(page, "wallet-eip3009-ready-390x844");
      await page.setViewportSize({ width: 1280, height: 900 });
      await shot(page, "wallet-eip3009-ready-1280x900");
      await page.setViewportSize({ width: 390, height: 844 });
      await button.click();
      await expect.poll(() => status(page).textContent()).toMatch(/^Signature accepted/);
      expect(await button.isVisible()).toBe(false);
      expect(wallet?.calls).toEqual(["eth_requestAccounts", "eth_chainId", "eth_signTypedData_v4"]);
      await shot(page, "wallet-eip3009-accepted-390x844");
      await submitAndSettle();
      await page.locator('[data-status="completed"]').waitFor({ timeout: 30_000 });
      expect(await seriousViolations(page)).toEqual([]);
      await shot(page, "wallet-eip3009-completed-390x844");
      expect((await getInvoice(live.server, merchant.apiKey, invoice.id)).status).toBe("completed");
      expect((await usdc.balanceOf(hotWallet())) - hotBefore).toBe(10_000_000n);
      // The payer signed and paid no gas: its ether is untouched.
      expect(await live.chain.balance(payer(live.chain, PAYER))).toBe(payerEth);
      expect(errors).toEqual([]);
      expect(thirdParty).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("pays a Permit2 (USDT-like) invoice by the one-time approval and a signature, then the next by a signature alone", async () => {
    const { token } = live;
    const first = await liveInvoice(live.server, merchant.apiKey, { currency: "USDT", amount: "25", order_no: "W-2" });
    const hotBefore = await token.balanceOf(hotWallet());
    const { context, page, errors, wallet } = await open(first.invoice_url, { discovery: "window.ethereum" });
    try {
      const button = page.getByRole("button", { name: "Pay with wallet" });
      await button.waitFor();
      expect(await page.locator(".wallet .hint").textContent()).toContain("approve Permit2 for USDT");
      await shot(page, "wallet-permit2-ready-390x844");
      await button.click();
      await expect.poll(() => status(page).textContent()).toMatch(/^Signature accepted/);
      expect(wallet?.calls).toEqual([
        "eth_requestAccounts",
        "eth_chainId",
        "eth_call",
        "eth_sendTransaction",
        "eth_getTransactionReceipt",
        "eth_signTypedData_v4",
      ]);
      const allowance = await live.chain.client.readContract({
        address: token.address,
        abi: erc20Abi,
        functionName: "allowance",
        args: [payer(live.chain, PAYER), PERMIT2_ADDRESS],
      });
      expect(allowance).toBe(maxUint256);
      await shot(page, "wallet-permit2-accepted-390x844");
      await submitAndSettle();
      await page.locator('[data-status="completed"]').waitFor({ timeout: 30_000 });
      await shot(page, "wallet-permit2-completed-390x844");
      expect((await token.balanceOf(hotWallet())) - hotBefore).toBe(25_000_000n);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
    // Approved once: the next invoice asks for a signature only.
    const second = await liveInvoice(live.server, merchant.apiKey, { currency: "USDT", amount: "5", order_no: "W-3" });
    const again = await open(second.invoice_url, { discovery: "both" });
    try {
      await again.page.getByRole("button", { name: "Pay with wallet" }).click();
      await expect.poll(() => status(again.page).textContent()).toMatch(/^Signature accepted/);
      expect(again.wallet?.calls).not.toContain("eth_sendTransaction");
      await submitAndSettle();
      await again.page.locator('[data-status="completed"]').waitFor({ timeout: 30_000 });
      expect(again.errors).toEqual([]);
    } finally {
      await again.context.close();
    }
    expect(await outboxOf(live.server, "flush")).toHaveLength(0);
    expect(thirdParty).toEqual([]);
  });

  it("is the page as before without a wallet", async () => {
    const invoice = await liveInvoice(live.server, merchant.apiKey, { currency: "USDC", amount: "3" });
    const { context, page, errors } = await open(invoice.invoice_url, null);
    try {
      await page.locator('[data-wallet][data-found="none"]').waitFor({ state: "attached" });
      expect(await page.locator("[data-wallet]").isVisible()).toBe(false);
      expect(await page.getByRole("button", { name: "Pay with wallet" }).count()).toBe(0);
      expect(await page.locator("[data-address]").isVisible()).toBe(true);
      expect(errors).toEqual([]);
    } finally {
      await context.close();
    }
  });

  it("says so when the wallet does not know the chain, or the payer declines, and posts nothing", async () => {
    const invoice = await liveInvoice(live.server, merchant.apiKey, { currency: "USDC", amount: "4" });
    const before = (await outboxOf(live.server, "submission")).length;
    const unknown = await open(invoice.invoice_url, { startChainId: 1, knownChains: [1] });
    try {
      await unknown.page.getByRole("button", { name: "Pay with wallet" }).click();
      await unknown.page.locator(".wallet-error").waitFor();
      expect(await status(unknown.page).textContent()).toBe(
        "Your wallet does not know the ethereum network (chain 1337), and this page cannot add it. Add the network in your wallet, then press “Pay with wallet” again.",
      );
      expect(unknown.wallet?.calls).not.toContain("eth_signTypedData_v4");
      expect(await unknown.page.getByRole("button", { name: "Pay with wallet" }).isEnabled()).toBe(true);
      await shot(unknown.page, "wallet-unknown-chain-390x844");
    } finally {
      await unknown.context.close();
    }
    const declining = await open(invoice.invoice_url, { decline: ["eth_signTypedData_v4"] });
    try {
      await declining.page.getByRole("button", { name: "Pay with wallet" }).click();
      await declining.page.locator(".wallet-error").waitFor();
      expect(await status(declining.page).textContent()).toBe("You declined in your wallet. Nothing was paid.");
    } finally {
      await declining.context.close();
    }
    expect(await outboxOf(live.server, "submission")).toHaveLength(before);
    expect((await getInvoice(live.server, merchant.apiKey, invoice.id)).status).toBe("pending");
  });

  it("shows the service's reason when it refuses the signature", async () => {
    const invoice = await liveInvoice(live.server, merchant.apiKey, { currency: "USDC", amount: "4" });
    // Payer 2 holds no USDC: the service's balance check refuses before anything is sent.
    const broke = await open(invoice.invoice_url, { account: payerAccount(live.chain, 2) });
    try {
      await broke.page.getByRole("button", { name: "Pay with wallet" }).click();
      await broke.page.locator(".wallet-error").waitFor();
      expect(await status(broke.page).textContent()).toBe(
        "The payment did not go through: the payer does not hold the amount.",
      );
      expect(broke.errors.filter((e) => !e.includes("400"))).toEqual([]);
    } finally {
      await broke.context.close();
    }
  });
});
