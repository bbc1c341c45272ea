// The dashboard's overview picture, recent activity sentences, the invoice fee line and the withdraw review step in headless Chromium; UPDATE_SCREENSHOTS=1 writes overview and withdraw-review shots.
import { randomBytes } from "node:crypto";
import { AxeBuilder } from "@axe-core/playwright";
import type { Page } from "playwright-core";
import { expect, it } from "vitest";
import { addDecimals } from "../../web/dashboard/src/decimal.ts";
import { PASSWORD } from "../support/dashboard.ts";
import { createInvoice, pay } from "../support/invoices.ts";
import { adjust } from "../support/refunds.ts";
import { admin, createMerchant } from "../support/server.ts";
import { balanceOf } from "../support/withdrawals.ts";
import { shots, useDashboardBrowser } from "./browser.ts";

const DAY_MS = 86_400_000;

const { server, browser } = useDashboardBrowser();

async function seriousViolations(page: Page): Promise<string[]> {
  const results = await new AxeBuilder({ page }).analyze();
  return results.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}

/** A month of a small shop: paid, expired and open invoices spread over the last 30 days. */
async function history(shop: { apiKey: string }): Promise<void> {
  const backdate = async (id: string, days: number) => {
    await server.ctx.store.transaction((tx) =>
      tx.db
        .updateTable("invoices")
        .set({ created_at: new Date(Date.now() - days * DAY_MS).toISOString() })
        .where("id", "=", id)
        .execute(),
    );
  };
  const paid: [number, string, string][] = [
    [0, "USDT", "49.9"],
    [1, "USDT", "120"],
    [2, "USDT", "35.5"],
    [4, "USDT", "80"],
    [6, "ETH", "0.25"],
    [7, "USDT", "64"],
    [9, "USDT", "22.75"],
    [12, "ETH", "0.1"],
    [13, "USDT", "150"],
    [16, "USDT", "49.9"],
    [19, "USDT", "75"],
    [22, "ETH", "0.4"],
    [24, "USDT", "99"],
    [27, "USDT", "18"],
  ];
  for (const [days, currency, amount] of paid) {
    const invoice = await createInvoice(server, shop.apiKey, { currency, amount, order_no: `A-${1000 + days}` });
    await pay(server, shop.apiKey, invoice.id, {});
    await backdate(invoice.id, days);
  }
  for (const days of [1, 5, 11, 20]) {
    const invoice = await createInvoice(server, shop.apiKey, { currency: "USDT", amount: "30" });
    await server.ctx.store.transaction((tx) =>
      tx.db.updateTable("invoices").set({ status: "expired" }).where("id", "=", invoice.id).execute(),
    );
    await backdate(invoice.id, days);
  }
  await createInvoice(server, shop.apiKey, { currency: "USDT", amount: "12" });
}

/** An owner invited to the merchant, signed in through the invitation page: on the overview. */
async function signedInOwner(merchantId: string) {
  const email = `owner-${randomBytes(4).toString("hex")}@acme.example`;
  const invited = await admin(server, "POST", `/merchants/${merchantId}/users`, { email, role: "owner" });

  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.on("dialog", (dialog) => (dialog.type() === "prompt" ? dialog.accept(PASSWORD) : dialog.accept()));
  const foreign: string[] = [];
  const consoleErrors: string[] = [];
  page.on("request", (request) => {
    if (!request.url().startsWith(server.baseUrl) && !request.url().startsWith("data:")) foreign.push(request.url());
  });
  page.on("console", (m) => {
    if (m.type() === "error") consoleErrors.push(m.text());
  });

  await page.goto(invited.body.inviteUrl.replace(server.config.publicBaseUrl, server.baseUrl));
  await page.getByLabel("New password").fill(PASSWORD);
  await page.getByRole("button", { name: "Set password" }).click();
  await page.getByRole("heading", { name: "Overview" }).waitFor();
  return { context, page, foreign, consoleErrors };
}

it("shows an invoice's fees as EstimateFees counts them: both fees, which the amount received lacks", async () => {
  const shop = await createMerchant(server, { merchantName: "Acme Coffee" });
  const invoice = await createInvoice(server, shop.apiKey, { currency: "USDT", amount: "49.9", order_no: "A-1" });
  await pay(server, shop.apiKey, invoice.id, {});
  const payer = await createMerchant(server, { merchantName: "Payer pays", feesPaidBy: "payer" });
  const priced = await createInvoice(server, payer.apiKey, { currency: "USDT", amount: "49.9" });
  const { context, page } = await signedInOwner(shop.id);
  try {
    await page.goto(`${server.baseUrl}/dashboard/invoices/${invoice.id}`);
    await page.getByText("You receive").waitFor();
    // 1 % of 49.9 and the catalog's 1 USDT network fee: 49.9 - 0.499 - 1.
    expect(await page.locator(".facts").textContent()).toContain(
      "48.401 USDT (fees 1.499 USDT: merchant fee 0.499 + network and other fees 1)",
    );
  } finally {
    await context.close();
  }
  const other = await signedInOwner(payer.id);
  try {
    await other.page.goto(`${server.baseUrl}/dashboard/invoices/${priced.id}`);
    await other.page.getByText("You receive").waitFor();
    expect(await other.page.locator(".facts").textContent()).toContain(
      "49.9 USDT (fees 1.499 USDT: merchant fee 0.499 + network and other fees 1, paid by the payer)",
    );
  } finally {
    await other.context.close();
  }
});

it("overview picture, activity sentences, invoice fees and the withdraw review", { timeout: 180_000 }, async () => {
  const shop = await createMerchant(server, { merchantName: "Acme Coffee" });
  await adjust(server, shop.id, "USDT", "100");
  const method = await admin(server, "POST", `/merchants/${shop.id}/withdrawal-methods`, {
    currency: "USDT",
    address: `0x${randomBytes(20).toString("hex")}`,
    label: "Treasury wallet (cold storage)",
  });
  expect(method.status).toBe(200);
  await history(shop);
  const { context, page, foreign, consoleErrors } = await signedInOwner(shop.id);

  // The picture: inline SVG drawn from the server's query, one volume chart per currency and the outcomes.
  await page.getByTestId("outcomes").waitFor();
  expect(await page.getByTestId("volume-USDT").locator("figcaption").textContent()).toContain(
    "764.05 USDT in the last 30 days",
  );
  expect(await page.getByTestId("volume-ETH").locator("figcaption").textContent()).toContain("0.75 ETH");
  const legend = await page.getByTestId("outcomes").locator(".legend").textContent();
  for (const part of ["Completed: 14", "Expired (also part-paid): 4", "Other (open or under review): 1"]) {
    expect(legend).toContain(part);
  }
  expect(await page.getByTestId("volume-USDT").locator("rect.bar").count()).toBe(11);
  expect(await page.getByTestId("outcomes").locator("svg[role=img]").getAttribute("aria-label")).toContain(
    "14 completed, 4 expired, 1 other",
  );
  // Recent activity reads as sentences, each linked to its subject.
  await page.getByRole("cell", { name: "The invoice for order A-1027 was paid: 18 USDT received." }).waitFor();
  expect(await page.locator("table").textContent()).not.toContain("invoice.completed");
  expect(await seriousViolations(page)).toEqual([]);
  await shots(page, "overview");

  // Withdraw: the picker shows the method's whole name; a review comes before anything is sent.
  const before = await balanceOf(server, shop.id);
  await page.getByRole("link", { name: "Withdrawals" }).click();
  const picker = page.locator('select[name="method"]');
  await picker.waitFor();
  const wholeName = `#${method.body.id} USDT · Treasury wallet (cold storage) · ${method.body.address}`;
  expect(await picker.locator("option").first().textContent()).toBe(wholeName);
  expect(await page.getByTestId("method-name").textContent()).toBe(wholeName);
  await page.getByLabel(/^Amount/).fill("25");
  await page.getByRole("button", { name: "Review withdrawal" }).click();
  const review = page.getByTestId("withdraw-review");
  await review.waitFor();
  expect(await page.getByTestId("withdraw-fee").textContent()).toBe("0 USDT");
  expect(await page.getByTestId("withdraw-receive").textContent()).toBe("25 USDT");
  expect(await review.textContent()).toContain(`${before} → ${addDecimals(before, "-25")} USDT`);
  const sentYet = () =>
    server.ctx.store.db.selectFrom("withdrawals").select("request_id").where("merchant_id", "=", shop.id).execute();
  expect(await sentYet()).toEqual([]);
  expect(await balanceOf(server, shop.id)).toBe(before);
  expect(await seriousViolations(page)).toEqual([]);
  await shots(page, "withdraw-review");
  // Changing the amount drops the review; review again, then send (a double click is one withdrawal).
  await page.getByLabel(/^Amount/).fill("20");
  await expect.poll(() => review.count()).toBe(0);
  await page.getByRole("button", { name: "Review withdrawal" }).click();
  await page.getByTestId("withdraw-receive").getByText("20 USDT").waitFor();
  await page.getByRole("button", { name: "Send withdrawal" }).dblclick();
  await page.getByText(/Withdrawal of 20 USDT accepted/).waitFor();
  expect(await sentYet()).toHaveLength(1);
  expect(await balanceOf(server, shop.id)).toBe(addDecimals(before, "-20"));

  expect(foreign).toEqual([]);
  expect(consoleErrors.filter((m) => m.includes("Content Security Policy"))).toEqual([]);
  await context.close();
});
