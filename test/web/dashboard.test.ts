// The dashboard in a real headless Chromium: invitation → password → TOTP → sign in with TOTP → API key → invoice → paid → callbacks → redeliver → revoke.
import { AxeBuilder } from "@axe-core/playwright";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type Receiver, startReceiver, waitFor } from "../support/callbacks.ts";
import { PASSWORD, totpAt, totpNow } from "../support/dashboard.ts";
import { createInvoice, pay } from "../support/invoices.ts";
import { admin, createMerchant, merchant } from "../support/server.ts";
import { SCREENSHOTS, SHOT_DIR, useDashboardBrowser } from "./browser.ts";

const { server, browser } = useDashboardBrowser();
let receiver: Receiver;

beforeAll(async () => {
  receiver = await startReceiver();
});

afterAll(async () => {
  await receiver?.close();
});

async function shot(page: Page, name: string): Promise<void> {
  if (SCREENSHOTS) await page.screenshot({ path: `${SHOT_DIR}/${name}.png`, fullPage: true });
}

/** Serious or critical accessibility violations (axe-core) of the page as it is now. */
async function accessibilityProblems(page: Page): Promise<string[]> {
  const results = await new AxeBuilder({ page }).analyze();
  return results.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`);
}

/** A page at 1280 and at 390 pixels wide (`<name>.png`, `<name>-mobile.png`). */
async function shotBoth(page: Page, name: string): Promise<void> {
  if (!SCREENSHOTS) return;
  await shot(page, name);
  await page.setViewportSize({ width: 390, height: 844 });
  await shot(page, `${name}-mobile`);
  await page.setViewportSize({ width: 1280, height: 800 });
}

it("invitation, password, TOTP, sign-in with TOTP, an API key used and revoked", { timeout: 120_000 }, async () => {
  const shop = await createMerchant(server, { merchantName: "Acme Coffee" });
  const email = "owner@acme.example";
  const invited = await admin(server, "POST", `/merchants/${shop.id}/users`, { email, role: "owner" });
  expect(invited.status).toBe(200);

  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const foreign: string[] = [];
  const cspErrors: string[] = [];
  page.on("request", (request) => {
    if (!request.url().startsWith(server.baseUrl) && !request.url().startsWith("data:")) foreign.push(request.url());
  });
  page.on("console", (m) => {
    if (m.type() === "error") cspErrors.push(m.text());
  });
  // Confirmations are accepted; the step-up prompt is answered with the password.
  page.on("dialog", (dialog) => (dialog.type() === "prompt" ? dialog.accept(PASSWORD) : dialog.accept()));

  // The invitation URL names the service's own origin.
  const inviteUrl = invited.body.inviteUrl.replace(server.config.publicBaseUrl, server.baseUrl);
  await page.goto(inviteUrl);
  await page.getByLabel("New password").fill(PASSWORD);
  await shot(page, "accept-invitation");
  await page.getByRole("button", { name: "Set password" }).click();
  await page.getByRole("heading", { name: "Overview" }).waitFor();
  // The overview's screenshots (a month of history) come from test/web/dashboardOverview.test.ts.

  // TOTP enrolment: the secret shown on the page gives the code.
  await page.getByRole("link", { name: "Account" }).click();
  await page.getByRole("button", { name: "Set up TOTP" }).click();
  const secret = (await page.getByTestId("totp-secret").textContent()) ?? "";
  expect(secret).toMatch(/^[A-Z2-7]+$/);
  await expect(page.getByAltText("QR code of the TOTP secret").isVisible()).resolves.toBe(true);
  await shot(page, "account-totp-enrolment");
  await page.getByLabel("Code").fill(totpNow(secret));
  await page.getByRole("button", { name: "Turn on TOTP" }).click();
  await page.getByTestId("recovery-codes").waitFor();
  expect(await page.getByTestId("recovery-codes").locator("li").count()).toBe(10);
  await shot(page, "account-recovery-codes");
  await page.getByRole("button", { name: "Done" }).click();
  await page.getByRole("button", { name: "Turn off TOTP" }).waitFor();
  await shot(page, "account");

  // Sign out, then sign in with the password and a TOTP code.
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(PASSWORD);
  await shot(page, "sign-in");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByLabel("Authentication code").waitFor();
  await shot(page, "sign-in-totp");
  // The enrolment spent the current time step (codes are single use): the next step's code.
  await page.getByLabel("Authentication code").fill(totpAt(secret, 1));
  // Keyboard: Enter submits.
  await page.keyboard.press("Enter");
  await page.getByRole("heading", { name: "Overview" }).waitFor();

  // A new API key: the secret is on the page once, gone after a reload.
  await page.getByRole("link", { name: "API keys" }).click();
  await page.getByRole("button", { name: "Create key" }).click();
  const apiKey = await page.getByTestId("new-api-key").inputValue();
  const secretKey = await page.getByTestId("new-secret-key").inputValue();
  expect(secretKey).toMatch(/^[0-9a-f]{64}$/);
  await shot(page, "api-keys-created");
  await page.reload();
  await page.getByRole("heading", { name: "API keys" }).waitFor();
  await page.getByRole("cell", { name: `${apiKey.slice(0, 10)}…` }).waitFor();
  expect(await page.content()).not.toContain(secretKey);
  expect(await page.getByTestId("new-secret-key").count()).toBe(0);

  // A scoped key, limited to an address range: ticked scopes and ranges; listed with them.
  const keyForm = page.getByTestId("new-api-key-form");
  await keyForm.getByRole("checkbox", { name: /invoices:write/ }).check();
  await keyForm.getByRole("checkbox", { name: /^read/ }).check();
  await keyForm.getByLabel(/Allowed client addresses/).fill("127.0.0.0/8, 2001:db8::/32");
  await shot(page, "api-keys-scoped-form");
  await keyForm.getByRole("button", { name: "Create key" }).click();
  const scopedKey = await page.getByTestId("new-api-key").inputValue();
  await page.getByRole("button", { name: "Done" }).click();
  const scopedRow = page.getByRole("row", { name: new RegExp(scopedKey.slice(0, 10)) });
  await scopedRow.getByText("127.0.0.0/8").waitFor();
  expect(await scopedRow.getByTestId("key-scopes").textContent()).toBe("invoices:writeread");
  expect((await merchant(server, scopedKey, "GET", "/public/v1/balances")).status).toBe(200);
  const refused = await merchant(server, scopedKey, "POST", "/public/v1/payment-links", {
    currency: "USDT",
    amount: "5",
  });
  expect(refused.body.code).toBe("insufficient_scope");
  await page.reload();
  await scopedRow.getByText("from 127.0.0.1").waitFor();
  expect(await accessibilityProblems(page)).toEqual([]);
  await shot(page, "api-keys-scoped");

  // The key works against the public API, until it is revoked in the dashboard.
  expect((await merchant(server, apiKey, "GET", "/public/v1/me")).status).toBe(200);

  // An invoice made with that key appears in the list; paid in the sandbox, it shows completed
  // with its callback deliveries, and one is redelivered from the dashboard.
  const invoice = await createInvoice(server, apiKey, {
    currency: "USDT",
    amount: "42.5",
    order_no: "ORDER-1001",
    description: "Two espressos",
    callbackUrl: receiver.url,
  });
  await page.getByRole("link", { name: "Invoices" }).click();
  await page.getByRole("link", { name: invoice.id }).waitFor();
  expect(await page.getByRole("row", { name: new RegExp(invoice.id) }).textContent()).toContain("pending");
  expect((await pay(server, apiKey, invoice.id, {})).status).toBe(200);
  await server.workers.loops.callbacks!.runOnce();
  await waitFor(() => receiver.received.length >= 1);
  await page.getByLabel("Search").fill("ORDER-1001");
  await page.keyboard.press("Enter");
  await page.getByRole("row", { name: /completed/ }).waitFor();
  expect(await accessibilityProblems(page)).toEqual([]);
  await shotBoth(page, "invoices");
  // The filters are in the URL: a reload keeps them.
  expect(page.url()).toContain("q=ORDER-1001");
  await page.reload();
  await page.getByRole("row", { name: /completed/ }).waitFor();
  expect(await page.getByLabel("Search").inputValue()).toBe("ORDER-1001");
  await page.getByRole("link", { name: invoice.id }).click();
  await page.getByRole("heading", { name: /Invoice/ }).waitFor();
  await page.getByRole("article", { name: "Callback invoice.completed" }).waitFor();
  expect(await page.getByRole("list").filter({ hasText: "completed" }).first().textContent()).toContain("pending");
  expect(await page.getByRole("article", { name: "Callback invoice.completed" }).textContent()).toContain("HTTP 200");
  // The quote fixed at creation, and the payment's USD value at confirmation (product §22).
  expect(await page.getByRole("definition").filter({ hasText: "1 USDT = 1 USD" }).textContent()).toContain("static");
  // Amount, USD at confirmation and USD at the live rate: 42.5 each at the static rate 1.
  expect(await page.getByRole("cell", { name: "42.5", exact: true }).count()).toBe(3);
  const delivered = receiver.received.length;
  await page.getByRole("button", { name: "Redeliver invoice.completed" }).click();
  await page.getByText("Scheduled: the event is sent again now").waitFor();
  await server.workers.loops.callbacks!.runOnce();
  await waitFor(() => receiver.received.length > delivered);
  await page.getByRole("button", { name: "Refresh" }).click();
  await page
    .getByRole("article", { name: "Callback invoice.completed" })
    .getByRole("cell", { name: "2", exact: true })
    .waitFor();
  expect(await accessibilityProblems(page)).toEqual([]);
  await shotBoth(page, "invoice-detail");

  // A payment link made in the dashboard is a link object (product §25): its URL makes one invoice per payer visit.
  await page.getByRole("link", { name: "← Invoices" }).click();
  await page.getByRole("button", { name: "Create payment link" }).click();
  await page.getByRole("textbox", { name: "Amount" }).fill("19.99");
  await page.getByLabel("Description").fill("LINK-7");
  await page.getByRole("button", { name: "Create link" }).click();
  const link = await page.getByTestId("payment-link").inputValue();
  expect(link).toMatch(/\/l\/[0-9a-f-]+$/);
  const links = page.getByRole("region", { name: "Payment links" });
  await links.getByText("19.99 USDT").waitFor();
  // The payer's Pay button (a form POST) makes the link's invoice.
  const form = { "content-type": "application/x-www-form-urlencoded" };
  const visited = await fetch(link, { method: "POST", headers: form, body: "", redirect: "manual" });
  expect(visited.status).toBe(303);
  await links.getByRole("button", { name: "Invoices" }).click();
  await links.getByRole("list").getByText("19.99 USDT").waitFor();
  await shotBoth(page, "invoices-payment-link");
  await links.getByRole("button", { name: "Deactivate" }).click();
  await links.getByRole("cell", { name: "inactive" }).waitFor();
  expect((await fetch(link, { redirect: "manual" })).status).toBe(410);

  // Callbacks: the default URL, the secret behind a step-up (the prompt answers with the password).
  await page.getByRole("link", { name: "Callbacks" }).click();
  await page.getByLabel("URL").fill(receiver.url);
  await page.getByRole("button", { name: "Save" }).click();
  await page.getByText("Default callback URL saved.").waitFor();
  const beforeTest = receiver.received.length;
  await page.getByRole("button", { name: "Send test event" }).click();
  await page.getByRole("article", { name: "Callback callback.test" }).waitFor();
  await server.workers.loops.callbacks!.runOnce();
  await waitFor(() => receiver.received.length > beforeTest);
  expect(JSON.parse(receiver.received.at(-1)!.body).type).toBe("callback.test");
  await page.getByRole("button", { name: "Refresh" }).click();
  await page.getByRole("article", { name: "Callback callback.test" }).getByText("HTTP 200").waitFor();
  expect(await accessibilityProblems(page)).toEqual([]);
  await shotBoth(page, "callbacks");
  await page.getByRole("button", { name: "Reveal secret" }).click();
  expect(await page.getByTestId("callback-secret").inputValue()).toMatch(/^whsec_/);

  await page.getByRole("link", { name: "API keys" }).click();
  await page.reload();
  await shot(page, "api-keys");
  await page.getByRole("button", { name: `Revoke ${apiKey.slice(0, 10)}` }).click();
  await page.getByText("Revoked").first().waitFor();
  expect((await merchant(server, apiKey, "GET", "/public/v1/me")).status).toBe(401);

  await page.getByRole("link", { name: "Team" }).click();
  await page.getByRole("cell", { name: email }).waitFor();
  await shot(page, "team");
  await page.getByRole("link", { name: "Audit log" }).click();
  await page.getByRole("cell", { name: "api_key.revoke" }).waitFor();
  await shot(page, "audit-log");

  // Narrow screens: the navigation stays usable.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.getByRole("link", { name: "Overview" }).click();
  await page.getByRole("heading", { name: "Overview" }).waitFor();
  // Recent activity: the invoice's completion as a sentence, linked to its detail.
  await page
    .getByRole("row", { name: new RegExp(`was paid.*${invoice.id}`) })
    .first()
    .waitFor();
  await page.getByRole("link", { name: invoice.id }).first().click();
  await page.getByRole("heading", { name: /Invoice/ }).waitFor();

  expect(foreign).toEqual([]);
  expect(cspErrors.filter((m) => m.includes("Content Security Policy"))).toEqual([]);
  await context.close();
});
