// The dashboard in a real headless Chromium: invitation → password → TOTP → sign out → sign in with TOTP → API key → public API → revoke.
import { mkdirSync } from "node:fs";
import { type Browser, chromium, type Page } from "playwright-core";
import { build } from "vite";
import { afterAll, beforeAll, expect, it } from "vitest";
import { PASSWORD, totpNow } from "../support/dashboard.ts";
import { admin, createMerchant, merchant, startTestServer, type TestServer } from "../support/server.ts";

const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === "1";
const SHOT_DIR = "docs/screenshots/dashboard";

let server: TestServer;
let browser: Browser;

beforeAll(async () => {
  await build({ configFile: "web/dashboard/vite.config.ts", logLevel: "warn" });
  server = await startTestServer();
  browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
  });
  if (SCREENSHOTS) mkdirSync(SHOT_DIR, { recursive: true });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.close();
});

async function shot(page: Page, name: string): Promise<void> {
  if (SCREENSHOTS) await page.screenshot({ path: `${SHOT_DIR}/${name}.png`, fullPage: true });
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
  page.on("dialog", (dialog) => dialog.accept());

  // The invitation URL names the service's own origin.
  const inviteUrl = invited.body.inviteUrl.replace(server.config.publicBaseUrl, server.baseUrl);
  await page.goto(inviteUrl);
  await page.getByLabel("New password").fill(PASSWORD);
  await shot(page, "accept-invitation");
  await page.getByRole("button", { name: "Set password" }).click();
  await page.getByRole("heading", { name: "Overview" }).waitFor();
  await shot(page, "overview");

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
  await page.getByLabel("Authentication code").fill(totpNow(secret));
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

  // The key works against the public API, until it is revoked in the dashboard.
  expect((await merchant(server, apiKey, "GET", "/public/v1/me")).status).toBe(200);
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
  await shot(page, "overview-mobile");

  expect(foreign).toEqual([]);
  expect(cspErrors.filter((m) => m.includes("Content Security Policy"))).toEqual([]);
  await context.close();
});
