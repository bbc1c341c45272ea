// The dashboard's subscriptions page in headless Chromium (product §29): plans and subscriptions in every state, a plan created and retired, the status filter, cancel at period end and now, the open invoice's link; UPDATE_SCREENSHOTS=1 writes subscriptions*.png.
import { randomBytes } from "node:crypto";
import { AxeBuilder } from "@axe-core/playwright";
import type { Page } from "playwright-core";
import { expect, it } from "vitest";
import { PASSWORD } from "../support/dashboard.ts";
import { pay } from "../support/invoices.ts";
import { admin, createMerchant, merchant } from "../support/server.ts";
import { signedCall } from "../support/signing.ts";
import { shots, useDashboardBrowser } from "./browser.ts";

const { server, browser } = useDashboardBrowser();

type Shop = Awaited<ReturnType<typeof createMerchant>>;

async function seriousViolations(page: Page): Promise<string[]> {
  const results = await new AxeBuilder({ page }).analyze();
  return results.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}

async function plan(shop: Shop, body: Record<string, unknown>) {
  const made = await merchant(server, shop.apiKey, "POST", "/public/v1/plans", { currency: "USDT", ...body });
  expect(made.status, made.text).toBe(200);
  return made.body;
}

async function subscribe(shop: Shop, planId: string, reference: string, email?: string) {
  const { answer } = await signedCall(server.baseUrl, {
    apiKey: shop.apiKey,
    secret: shop.secretKey,
    path: "/public/v1/subscriptions",
    body: { planId, customer: { reference, ...(email ? { email } : {}) } },
  });
  expect(answer.status, answer.text).toBe(200);
  return answer.body;
}

/** A small shop's subscribers: trialing, incomplete with its first invoice, active, and past due. */
async function subscribers(shop: Shop) {
  const pro = await plan(shop, { name: "Pro", amount: "12.5", interval: "month", trialDays: 14 });
  const weekly = await plan(shop, { name: "Coffee weekly", amount: "5", interval: "week" });
  await subscribe(shop, pro.id, "alice", "alice@example.com");
  const bob = await subscribe(shop, weekly.id, "bob");
  const carol = await subscribe(shop, weekly.id, "carol", "carol@example.com");
  expect((await pay(server, shop.apiKey, carol.openInvoice.id)).status).toBe(200);
  const dave = await subscribe(shop, weekly.id, "dave");
  expect((await pay(server, shop.apiKey, dave.openInvoice.id)).status).toBe(200);
  const to = new Date(Date.parse(dave.currentPeriodEnd) + 60_000).toISOString();
  const late = await merchant(server, shop.apiKey, "POST", `/sandbox/v1/subscriptions/${dave.id}/advance`, { to });
  expect(late.body.status).toBe("past_due");
  return { bob, daveInvoice: late.body.openInvoice.id as string };
}

it("shows plans and subscriptions, creates and retires a plan, filters and cancels", { timeout: 120_000 }, async () => {
  const shop = await createMerchant(server, { merchantName: "Acme Coffee" });
  const { bob, daveInvoice } = await subscribers(shop);
  const email = `owner-${randomBytes(4).toString("hex")}@acme.example`;
  const invited = await admin(server, "POST", `/merchants/${shop.id}/users`, { email, role: "owner" });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.on("dialog", (dialog) => dialog.accept());
  const foreign: string[] = [];
  page.on("request", (request) => {
    if (!request.url().startsWith(server.baseUrl) && !request.url().startsWith("data:")) foreign.push(request.url());
  });
  await page.goto(invited.body.inviteUrl.replace(server.config.publicBaseUrl, server.baseUrl));
  await page.getByLabel("New password").fill(PASSWORD);
  await page.getByRole("button", { name: "Set password" }).click();
  await page.getByRole("heading", { name: "Overview" }).waitFor();
  await page.getByRole("link", { name: "Subscriptions" }).click();

  const plans = page.getByRole("table", { name: "Plans" });
  const subscriptions = page.getByRole("table", { name: "Subscriptions" });
  await plans.getByRole("cell", { name: "12.5 USDT / month" }).waitFor();
  await subscriptions.getByRole("cell", { name: "carol carol@example.com" }).waitFor();
  expect(await subscriptions.locator("tbody tr").count()).toBe(4);
  expect(await subscriptions.locator(".badge").allTextContents()).toEqual([
    "past due",
    "active",
    "incomplete",
    "trialing",
  ]);
  expect(await seriousViolations(page)).toEqual([]);

  // A plan made in the form, then retired.
  await page.getByRole("button", { name: "Create plan" }).click();
  const form = page.getByRole("form", { name: "Create a plan" });
  await form.getByLabel("Name").fill("Beans yearly");
  await form.getByLabel("Price per period").fill("120");
  await form.getByRole("combobox", { name: /^Interval/ }).selectOption("year");
  await form.getByLabel("Trial (days)").fill("30");
  await form.getByRole("button", { name: "Create plan" }).click();
  await plans.getByRole("cell", { name: "120 USDT / year" }).waitFor();
  await page.getByRole("button", { name: "Retire Beans yearly" }).click();
  await page.getByRole("button", { name: "Reactivate Beans yearly" }).waitFor();

  // Cancel at the period's end, then now.
  await page.getByRole("button", { name: "Cancel carol at period end" }).click();
  await page.getByText(/^carol's subscription ends on /).waitFor();
  expect(await subscriptions.getByText("ends with this period").count()).toBe(1);
  await page.getByRole("button", { name: "Cancel bob now" }).click();
  await page.getByText("bob's subscription is canceled.").waitFor();
  expect(await page.getByRole("button", { name: "Cancel bob now" }).count()).toBe(0);
  await shots(page, "subscriptions");

  // The filter, and the open invoice's link to its page.
  await page.getByRole("combobox", { name: /^Status/ }).selectOption("past_due");
  await expect.poll(() => subscriptions.locator("tbody tr").count()).toBe(1);
  expect(await subscriptions.getByText("pending, period 2").count()).toBe(1);
  await subscriptions.getByRole("link", { name: "5 USDT" }).click();
  await page.waitForURL(`**/dashboard/invoices/${daveInvoice}`);
  await page.getByRole("heading", { name: /Invoice/ }).waitFor();

  const canceled = await merchant(server, shop.apiKey, "GET", `/public/v1/subscriptions/${bob.id}`);
  expect(canceled.body.status).toBe("canceled");
  await page.getByRole("link", { name: "Audit log" }).click();
  for (const action of ["plan.create", "plan.retire", "subscription.cancel_at_period_end", "subscription.cancel"]) {
    await page.getByRole("cell", { name: action, exact: true }).waitFor();
  }
  expect(foreign).toEqual([]);
  await context.close();
});
