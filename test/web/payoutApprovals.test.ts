// The approval queue in headless Chromium (product §31): an approver sees a withdrawal held over the payout policy and approves it; the owner's policy editor shows the policy.
import { randomBytes } from "node:crypto";
import { expect, it } from "vitest";
import { PASSWORD } from "../support/dashboard.ts";
import { admin } from "../support/server.ts";
import { fundedMerchant, withdraw } from "../support/withdrawals.ts";
import { shots, useDashboardBrowser } from "./browser.ts";

const { server, browser } = useDashboardBrowser();

it("an approver approves a held withdrawal from the approval queue", { timeout: 90_000 }, async () => {
  const shop = await fundedMerchant(server, "1000");
  const policy = { perPayoutLimit: "100", dailyLimit: "500", approvalsRequired: 1 };
  expect((await admin(server, "PUT", `/merchants/${shop.id}/payout-policies/USDT`, policy)).status).toBe(200);
  const held = await withdraw(server, shop, { amount: "250" });
  expect(held.answer.body.request.payout_processor_status).toBe("awaiting_approval");
  const email = `approver-${randomBytes(4).toString("hex")}@acme.example`;
  const invited = await admin(server, "POST", `/merchants/${shop.id}/users`, { email, role: "approver" });

  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.on("dialog", (dialog) => (dialog.type() === "prompt" ? dialog.accept(PASSWORD) : dialog.accept()));
  await page.goto(invited.body.inviteUrl.replace(server.config.publicBaseUrl, server.baseUrl));
  await page.getByLabel("New password").fill(PASSWORD);
  await page.getByRole("button", { name: "Set password" }).click();
  await page.getByRole("heading", { name: "Overview" }).waitFor();

  await page.getByRole("link", { name: "Approvals" }).click();
  await page.getByRole("cell", { name: "250 USDT" }).waitFor();
  await page.getByRole("cell", { name: "over the limit per payout" }).waitFor();
  await page.getByRole("cell", { name: "USDT", exact: true }).waitFor();
  await shots(page, "approvals");
  await page.getByRole("button", { name: "Approve" }).click();
  await page.getByText("250 USDT: approved.").waitFor();
  await page.getByRole("cell", { name: "approved", exact: true }).waitFor();
  const payout = await server.ctx.store.db
    .selectFrom("payouts")
    .select("state")
    .where("request_id", "=", held.requestId.toLowerCase())
    .executeTakeFirstOrThrow();
  expect(payout.state).not.toBe("awaiting_approval");
  // An approver reads the policies; only owners get the editor.
  expect(await page.getByRole("form", { name: "Payout policy" }).count()).toBe(0);
  await context.close();
});
