// The dashboard's money pages in headless Chromium: add a withdrawal method (step-up asked), withdraw (a double click is one withdrawal), the payout completes in the sandbox, refund a completed invoice, resolve a partial payment, read the ledger.
import { randomBytes } from "node:crypto";
import type { Page } from "playwright-core";
import { expect, it } from "vitest";
import { PASSWORD } from "../support/dashboard.ts";
import { createInvoice, pay } from "../support/invoices.ts";
import { adjust, completedInvoice, invoiceStatus } from "../support/refunds.ts";
import { admin, createMerchant } from "../support/server.ts";
import { balanceOf } from "../support/withdrawals.ts";
import { shots, useDashboardBrowser } from "./browser.ts";

// The payout workers run by themselves, and the sandbox processor settles a payout 200 ms after its acceptance.
const { server, browser } = useDashboardBrowser({ workers: true, env: { SANDBOX_PAYOUT_DELAY_MS: "200" } });

/**
 * Reloads until `text` shows (a worker settles the payout in the background), for at most 30 s: a
 * loaded CI machine once took longer than 40 quick reloads. On failure it says where the payout was.
 */
async function reloadUntil(page: Page, text: string, requestId: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if ((await page.getByText(text, { exact: true }).count()) > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
    await page.reload();
  }
  const payout = await server.ctx.store.db
    .selectFrom("payouts")
    .selectAll()
    .where("request_id", "=", requestId)
    .execute();
  throw new Error(`"${text}" never showed; payout rows: ${JSON.stringify(payout)}`);
}

it("method, withdraw, payout, refund and ledger from the dashboard", { timeout: 120_000 }, async () => {
  const shop = await createMerchant(server, { merchantName: "Acme Coffee", feePercent: "0" });
  await adjust(server, shop.id, "USDT", "100");
  const email = `owner-${randomBytes(4).toString("hex")}@acme.example`;
  const invited = await admin(server, "POST", `/merchants/${shop.id}/users`, { email, role: "owner" });

  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const prompts: string[] = [];
  page.on("dialog", (dialog) => {
    if (dialog.type() === "prompt") {
      prompts.push(dialog.message());
      return dialog.accept(PASSWORD);
    }
    return dialog.accept();
  });
  const foreign: string[] = [];
  page.on("request", (request) => {
    if (!request.url().startsWith(server.baseUrl) && !request.url().startsWith("data:")) foreign.push(request.url());
  });

  await page.goto(invited.body.inviteUrl.replace(server.config.publicBaseUrl, server.baseUrl));
  await page.getByLabel("New password").fill(PASSWORD);
  await page.getByRole("button", { name: "Set password" }).click();
  await page.getByRole("heading", { name: "Overview" }).waitFor();
  // A sign-in counts as a step-up for 5 minutes; make it old, so adding a method asks for one.
  await server.ctx.store.transaction((tx) =>
    tx.db
      .updateTable("dashboard_sessions")
      .set({ step_up_at: new Date(Date.now() - 6 * 60_000).toISOString() })
      .execute(),
  );

  // Add a withdrawal method: the step-up is asked, then the method is listed.
  await page.getByRole("link", { name: "Withdrawal methods" }).click();
  const address = `0x${randomBytes(20).toString("hex")}`;
  await page.getByLabel("Address").fill("0x1234");
  await page.getByRole("button", { name: "Add method" }).click();
  await page.getByRole("alert").waitFor();
  expect(await page.getByRole("alert").textContent()).toContain("not a valid");
  expect(prompts).toHaveLength(1);
  await page.getByLabel("Address").fill(address);
  await page.getByLabel("Label").fill("Treasury");
  await page.getByRole("button", { name: "Add method" }).click();
  await page.getByText("Withdrawal method added.").waitFor();
  await page.getByRole("cell", { name: "Treasury" }).waitFor();
  expect(prompts).toHaveLength(1);
  await shots(page, "withdrawal-methods");

  // Withdraw: reviewed first, then sent; a double click is one withdrawal (the form's request id).
  await page.getByRole("link", { name: "Withdrawals" }).click();
  await page.getByLabel(/^Amount/).fill("25");
  await page.getByRole("button", { name: "Review withdrawal" }).click();
  await page.getByTestId("withdraw-review").waitFor();
  await page.getByRole("button", { name: "Send withdrawal" }).dblclick();
  await page.getByText(/Withdrawal of 25 USDT accepted/).waitFor();
  const withdrawals = await server.ctx.store.db
    .selectFrom("withdrawals")
    .select("request_id")
    .where("merchant_id", "=", shop.id)
    .execute();
  expect(withdrawals).toHaveLength(1);
  expect(await balanceOf(server, shop.id)).toBe("75");

  // The sandbox payout completes; the detail shows it with its transaction.
  const id = withdrawals[0]?.request_id as string;
  await page.getByRole("link", { name: id }).click();
  await page.getByRole("heading", { name: "Withdrawal", exact: true }).waitFor();
  await reloadUntil(page, "completed", id);
  expect(await page.locator(".facts").textContent()).toContain("Treasury");
  await shots(page, "withdrawal-detail");
  await page.getByRole("link", { name: "← Withdrawals" }).click();
  await page.getByRole("cell", { name: "completed" }).waitFor();
  await shots(page, "withdrawals");

  // Refund a completed invoice in crypto, to an address, from the invoice's own page.
  const invoice = await completedInvoice(server, shop, { currency: "USDT", amount: "20" });
  await page.getByRole("link", { name: "Invoices" }).click();
  await page.getByRole("link", { name: invoice.id }).click();
  await page.getByRole("link", { name: "Refund…" }).click();
  const refundForm = page.getByRole("form", { name: "Refund an invoice" });
  expect(await refundForm.getByLabel("Invoice id").inputValue()).toBe(invoice.id);
  await refundForm.getByLabel("Address").fill(`0x${randomBytes(20).toString("hex")}`);
  await refundForm.getByLabel("Reason").fill("Order cancelled");
  await refundForm.getByRole("button", { name: "Refund", exact: true }).click();
  await page.getByText(/Refund of 20 USDT accepted/).waitFor();
  await page.getByRole("cell", { name: invoice.id }).waitFor();
  for (let i = 0; i < 40 && (await invoiceStatus(server, shop, invoice.id)) !== "refunded"; i++) {
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  expect(await invoiceStatus(server, shop, invoice.id)).toBe("refunded");

  // An invoice that expired with a partial payment: the owner accepts what it received.
  const partial = await createInvoice(server, shop.apiKey, { currency: "USDT", amount: "50" });
  expect((await pay(server, shop.apiKey, partial.id, { amount: "20" })).status).toBe(200);
  await server.ctx.store.transaction((tx) =>
    tx.db
      .updateTable("invoices")
      .set({ expires_at: new Date(Date.now() - 60_000).toISOString() })
      .where("id", "=", partial.id)
      .execute(),
  );
  for (let i = 0; i < 10 && (await server.workers.loops.expiry?.runOnce()) !== 0; i++) {}
  const resolveForm = page.getByRole("form", { name: "Resolve a late or partial payment" });
  await resolveForm.getByLabel("Invoice id").fill(partial.id);
  await resolveForm.getByRole("button", { name: "Resolve" }).click();
  await page.getByText(`Invoice ${partial.id} resolved (accept); it is now completed.`).waitFor();
  await shots(page, "refunds");

  // The ledger: the balance shown is the service's, with each entry's cause.
  await page.getByRole("link", { name: "Ledger" }).click();
  await page.getByTestId("ledger-balance").waitFor();
  expect(await page.getByTestId("ledger-balance").textContent()).toBe(await balanceOf(server, shop.id));
  for (const cause of ["adjustment", "withdrawal", "invoice", "refund"]) {
    await page.getByRole("cell", { name: cause, exact: true }).first().waitFor();
  }
  await shots(page, "ledger");

  // The audit log has each money action.
  await page.getByRole("link", { name: "Audit log" }).click();
  for (const action of ["withdrawal_method.add", "withdrawal.create", "refund.crypto", "invoice.resolve"]) {
    await page.getByRole("cell", { name: action }).waitFor();
  }
  expect(foreign).toEqual([]);
  await context.close();
});
