// The dashboard's account switcher in a real headless Chromium: one login in two merchants signs in, switches, and sees each merchant's own pages; UPDATE_SCREENSHOTS=1 writes docs/screenshots/dashboard/account-switcher*.png.
import { AxeBuilder } from "@axe-core/playwright";
import { expect, it } from "vitest";
import { invitedUser, inviteToken, PASSWORD } from "../support/dashboard.ts";
import { admin, call, createMerchant } from "../support/server.ts";
import { SCREENSHOTS, SHOT_DIR, useDashboardBrowser } from "./browser.ts";

const { server, browser } = useDashboardBrowser();

it("switches between the merchants of one login", { timeout: 120_000 }, async () => {
  const coffee = await createMerchant(server, { merchantName: "Acme Coffee" });
  const tea = await createMerchant(server, { merchantName: "Acme Tea" });
  const owner = await invitedUser(server, coffee.id, "owner");
  const invited = await admin(server, "POST", `/merchants/${tea.id}/users`, { email: owner.email, role: "viewer" });
  const accepted = await call(server.baseUrl, "POST", "/dashboard/v1/invitations/accept", {
    body: { token: inviteToken(invited.body.inviteUrl), password: PASSWORD },
  });
  expect(accepted.status).toBe(200);

  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  await page.goto(`${server.baseUrl}/dashboard/`);
  await page.getByLabel("Email").fill(owner.email);
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Overview" }).waitFor();

  const switcher = page.getByLabel("Account");
  expect(await switcher.inputValue()).toBe(coffee.id);
  expect(await switcher.locator("option").allTextContents()).toEqual(["Acme Coffee", "Acme Tea"]);
  // An owner in Acme Coffee sees its audit log.
  await page.getByRole("link", { name: "Audit log" }).waitFor();
  if (SCREENSHOTS) await page.screenshot({ path: `${SHOT_DIR}/account-switcher.png`, fullPage: true });
  const violations = (await new AxeBuilder({ page }).analyze()).violations.filter(
    (v) => v.impact === "serious" || v.impact === "critical",
  );
  expect(violations.map((v) => v.id)).toEqual([]);

  await switcher.selectOption(tea.id);
  await expect.poll(() => switcher.inputValue()).toBe(tea.id);
  await page.getByRole("heading", { name: "Overview" }).waitFor();
  // A viewer in Acme Tea: no audit log there.
  await expect.poll(() => page.getByRole("link", { name: "Audit log" }).count()).toBe(0);
  const session = (await page.evaluate(async () => (await fetch("/dashboard/v1/session")).json())) as {
    merchant: unknown;
  };
  expect(session.merchant).toEqual({ id: tea.id, name: "Acme Tea" });
  if (SCREENSHOTS) {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: `${SHOT_DIR}/account-switcher-mobile.png`, fullPage: true });
  }
  await context.close();
});
