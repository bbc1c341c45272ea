// Pay by card (product §20): the invoice's one checkout at the card provider, created on the first click and reused after.
import { checkoutExpiry, toProviderMinor } from "../domain/cardProvider.ts";
import { isFiat } from "../domain/currencies.ts";
import { err, ok, type Result } from "../domain/result.ts";
import { ensureCheckout, findCheckoutByInvoice, saveCheckoutSession } from "../store/cardPayments.ts";
import { findCurrency } from "../store/currencies.ts";
import { findInvoiceById } from "../store/invoices.ts";
import { nowIso } from "../store/store.ts";
import type { ServiceContext } from "./context.ts";

export type StartCheckoutError =
  | "invoice_not_found"
  | "card_payment_unavailable"
  | "invoice_not_payable"
  | "card_amount_not_representable"
  | "card_provider_unavailable"
  | "card_provider_refused";

/**
 * The provider's checkout URL for the invoice. The first call writes the checkout's parameters
 * (amount, expiry) and asks the provider with the invoice id as idempotency key; every later call,
 * from any process, answers the stored session, or asks again with the same parameters, which the
 * provider answers with the same session. The browser's return proves nothing: only the
 * provider's webhook pays the invoice (applyCardProviderEvent).
 */
export async function startCardCheckout(
  ctx: ServiceContext,
  invoiceId: string,
  now: Date = new Date(),
): Promise<Result<{ url: string }, StartCheckoutError>> {
  const provider = ctx.cardProvider;
  const loaded = await findInvoiceById(ctx.store, invoiceId);
  if (!loaded) return err("invoice_not_found", "No invoice with this id.");
  const { invoice, decimals } = loaded;
  const currency = await findCurrency(ctx.store, invoice.currency);
  if (provider === null || ctx.config.serviceMode !== "live" || currency === null || !isFiat(currency)) {
    return err("card_payment_unavailable", "This invoice is not paid by card here.");
  }
  // Card payments pay the whole invoice at once: only an invoice nothing was paid into takes one.
  const expired = invoice.expiresAt !== null && invoice.expiresAt <= now.toISOString();
  if (invoice.status !== "pending" || expired) {
    return err("invoice_not_payable", `The invoice takes no payment: it is ${expired ? "expired" : invoice.status}.`);
  }
  const stored = await findCheckoutByInvoice(ctx.store, invoice.id);
  if (stored?.url) return ok({ url: stored.url });
  const amount = toProviderMinor(invoice.finalAmountMinor, decimals, currency.ticker);
  if (!amount.ok) return err("card_amount_not_representable", `${amount.detail}.`);
  const checkout = await ctx.store.transaction((tx) =>
    ensureCheckout(
      tx,
      {
        invoiceId: invoice.id,
        provider: provider.name,
        amountMinor: amount.value,
        expiresAt: checkoutExpiry(invoice.expiresAt, now),
      },
      nowIso(),
    ),
  );
  const created = await provider.createCheckout({
    invoiceId: invoice.id,
    amountMinor: BigInt(checkout.amount),
    currency: currency.ticker,
    label: invoice.orderNo === null ? `Invoice ${invoice.id}` : `Order ${invoice.orderNo}`,
    returnUrl: `${ctx.config.publicBaseUrl}/pay/${encodeURIComponent(invoice.id)}`,
    expiresAt: checkout.expires_at,
  });
  if (!created.ok) {
    return created.error === "provider_unavailable"
      ? err("card_provider_unavailable", "The card provider did not answer; try again in a moment.")
      : err("card_provider_refused", "The card provider refused the checkout.");
  }
  await saveCheckoutSession(ctx.store, invoice.id, created.value, nowIso());
  return ok({ url: created.value.url });
}
