// Resolve an invoice (the operator API and the owner's dashboard): accept or refund what a failed or expired invoice received (product §12, §19), once per payment; each resolution covers the confirmed payments no earlier one covered.
import { type Static, Type } from "typebox";
import { inUnitsOf } from "../domain/currencies.ts";
import { checkEvmAddress } from "../domain/evmAddress.ts";
import { priceInvoice } from "../domain/fees.ts";
import { type Invoice, invoiceView } from "../domain/invoices.ts";
import { merchantAccount, movement, SYSTEM_ACCOUNTS } from "../domain/ledger.ts";
import { parseDecimal } from "../domain/money.ts";
import type { PayoutRailPolicy } from "../domain/payout.ts";
import { err, invariantViolation, ok, type Result } from "../domain/result.ts";
import {
  completionMovement,
  type EntryShare,
  splitCompletionMovement,
  summarizePayments,
} from "../domain/settlement.ts";
import { recordInvoiceEvent } from "../store/events.ts";
import { applyTransition, findInvoiceById, type LoadedInvoice, listPayments, lockInvoice } from "../store/invoices.ts";
import { postMovement } from "../store/ledger.ts";
import { findMerchant } from "../store/merchants.ts";
import { acceptPayout } from "../store/payouts.ts";
import { insertRefund } from "../store/refunds.ts";
import { claimResolutionRequest, markResolved, resolutionRefundId, unresolvedPayments } from "../store/resolutions.ts";
import { entryOfPayments, entryShares, invoiceCurrencies } from "../store/settlement.ts";
import { nowIso, type Tx } from "../store/store.ts";
import type { ServiceContext } from "./context.ts";
import { payoutRailPolicy } from "./payoutProcessors.ts";
import { type Outcome, refuse, withRefusals } from "./refusal.ts";
import { type ScreeningRefusal, screenDestination } from "./screenDestination.ts";

export type Resolution = { action: "accept" } | { action: "refund"; address: string };

export type ResolutionError =
  | "invoice_already_resolved"
  | "nothing_to_resolve"
  | "invalid_address"
  | "invoice_status_changed"
  | "payments_unconfirmed"
  | "payments_under_aml_review"
  | "payments_on_several_networks";

/** Statuses whose received money waits for a resolution: the invoice ended without completing. */
const RESOLVABLE = new Set(["failed", "expired"]);

export const ResolveBody = Type.Object(
  {
    action: Type.Union([Type.Literal("accept"), Type.Literal("refund")]),
    address: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  },
  {
    additionalProperties: false,
    description: "`refund` needs `address`, the payer's EVM address the confirmed amount less the network fee goes to.",
  },
);

/** What resolving an invoice refuses. */
export type ResolveRefusal = ResolutionError | "invalid_resolution" | "invoice_not_found" | ScreeningRefusal["code"];

/**
 * Resolves an invoice, for the operator API and the owner's dashboard alike: a refund's address is
 * screened first, outside any transaction (a refund to the payer is a payout like any other,
 * product §21); then resolveInvoiceFor and `alsoInTx` (the dashboard's audit record) in one
 * transaction. Answers the invoice after.
 */
export async function resolveInvoiceOf(
  ctx: ServiceContext,
  invoiceId: string,
  /** The merchant's own invoice only (the dashboard); undefined: any (the operator). */
  merchantId: string | undefined,
  body: Static<typeof ResolveBody>,
  alsoInTx?: (tx: Tx, resolved: LoadedInvoice) => Promise<unknown>,
): Promise<Outcome<LoadedInvoice, ResolveRefusal>> {
  const screened = body.address === undefined ? null : await screenDestination(ctx, body.address);
  if (screened !== null) return { ok: false, refusal: screened };
  return withRefusals(() =>
    ctx.store.transaction(async (tx) => {
      const policy = payoutRailPolicy(ctx);
      const resolved = await resolveInvoiceFor(tx, invoiceId, merchantId, body, ctx.config.publicBaseUrl, policy);
      await alsoInTx?.(tx, resolved);
      return resolved;
    }),
  );
}

/**
 * Resolves an invoice in the caller's transaction: the body's consistency, the invoice (the
 * merchant's own when `merchantId` is given, another merchant's answering as an unknown one), then
 * resolveInvoice. Answers the invoice after.
 */
async function resolveInvoiceFor(
  tx: Tx,
  invoiceId: string,
  merchantId: string | undefined,
  body: Static<typeof ResolveBody>,
  publicBaseUrl: string,
  /** What this service pays out by: a refund's payout rail is chosen from it. */
  railPolicy?: PayoutRailPolicy,
): Promise<LoadedInvoice> {
  const { action, address } = body;
  if (action === "refund" && address === undefined) {
    refuse("invalid_resolution", "A refund needs the payer's address.", "/address", "is required with action refund");
  }
  if (action === "accept" && address !== undefined) {
    refuse(
      "invalid_resolution",
      "An accepted payment goes to the merchant: no address.",
      "/address",
      "only with action refund",
    );
  }
  const invoice = await lockInvoice(tx, invoiceId, merchantId);
  if (!invoice) return refuse("invoice_not_found", "No invoice with this id.", "/", null);
  const resolved = await resolveInvoice(
    tx,
    invoice,
    action === "accept" ? { action } : { action, address: address ?? "" },
    nowIso(),
    publicBaseUrl,
    railPolicy,
  );
  if (!resolved.ok) {
    const detail = `${resolved.detail ?? "The invoice cannot be resolved"}.`;
    if (resolved.error === "invalid_address") refuse(resolved.error, detail, "/address", resolved.detail ?? "");
    refuse(resolved.error, detail, "/", null);
  }
  const after = await findInvoiceById(tx, invoice.id);
  if (!after) throw invariantViolation("a resolved invoice exists");
  return after;
}

/**
 * Resolves a locked invoice (lockInvoice) once. `accept` moves a failed or expired invoice to
 * completed and credits its confirmed payments, with fees computed on what was paid; `refund`
 * sends the confirmed amount less the network fee back to `address` through a refund payout (the
 * payout machinery carries it out; a failed payout credits the merchant, who may refund again).
 * Both post to the ledger and record a signed callback in the same transaction.
 */
async function resolveInvoice(
  tx: Tx,
  invoice: Invoice,
  resolution: Resolution,
  now: string,
  publicBaseUrl: string,
  /** What this service pays out by: a refund's rail is chosen from it (store/payouts.ts payoutRailFor). */
  railPolicy?: PayoutRailPolicy,
): Promise<Result<Invoice, ResolutionError>> {
  const row = await tx.db.selectFrom("invoices").select("resolution").where("id", "=", invoice.id).executeTakeFirst();
  if (!RESOLVABLE.has(invoice.status)) {
    if (row?.resolution) return err("invoice_already_resolved", `the invoice was resolved with ${row.resolution}`);
    return err("nothing_to_resolve", `the invoice is ${invoice.status}; only failed or expired invoices are resolved`);
  }
  const unresolved = await unresolvedPayments(tx, invoice.id);
  if (unresolved === null) {
    return err("payments_unconfirmed", "a payment of the invoice is not confirmed yet: resolve it once it is");
  }
  const payments = await listPayments(tx, invoice.id);
  // Only what no earlier resolution covered: a later payment is resolved on its own, never twice.
  const covered = payments.filter((p) => unresolved.open.has(p.id));
  const confirmedMinor = summarizePayments(covered).settledMinor;
  if (confirmedMinor <= 0n) {
    if (unresolved.underReview > 0) {
      return err(
        "payments_under_aml_review",
        "the invoice's unresolved payments are flagged by screening or wait for it: the operator decides them first (POST /admin/v1/invoices/{id}/aml with their paymentId)",
      );
    }
    if (row?.resolution) return err("invoice_already_resolved", `the invoice was resolved with ${row.resolution}`);
    return err("nothing_to_resolve", "the invoice has no confirmed payment");
  }
  const currencies = await invoiceCurrencies(tx, invoice);
  // Without autoconvert, in the entry the payments came in on (balances are per entry, product §23).
  const sameCurrency = currencies.settlement.ticker === currencies.currency.ticker;
  // Also an entry with other decimals than the invoice's units: the money is there, in its units.
  const entry = sameCurrency ? await entryOfPayments(tx, invoice, covered) : null;
  if (entry === "several" && resolution.action === "refund")
    return err("payments_on_several_networks", "the payments came in on several networks: a refund goes out on one");
  const currency = entry !== null && entry !== "several" ? entry : currencies.currency;
  const settlement = entry !== null && entry !== "several" ? entry : currencies.settlement;
  const merchant = await findMerchant(tx, invoice.merchantId);
  if (!merchant) throw invariantViolation(`invoice ${invoice.id} is complete`);
  const facts: Unresolved = {
    invoice,
    // Payments count in the invoice's precision; posted in the entry's own units.
    confirmedMinor: inUnitsOf(confirmedMinor, currencies.currency.decimals, currency.decimals),
    currency,
    shares: entry === "several" ? await entryShares(tx, invoice, covered) : null,
    n: unresolved.before + 1,
    coveredIds: [...unresolved.open],
    now,
    publicBaseUrl,
  };
  if (resolution.action === "accept") return resolveByAccepting(tx, facts, merchant.feePercent, settlement);
  const refunded = await resolveByRefunding(tx, facts, resolution.address, railPolicy);
  if (!refunded.ok) return refunded;
  // The status stays; the merchant still hears of the resolution: an event (product §15) carrying
  // the invoice, queued to its callback_url when it has one.
  const view = invoiceView({ ...invoice, updatedAt: now }, currencies.currency.decimals, payments, publicBaseUrl);
  await recordInvoiceEvent(tx, view, now);
  return ok({ ...invoice, updatedAt: now });
}

/** What both resolutions start from: the payments no earlier resolution covered. */
interface Unresolved {
  invoice: Invoice;
  confirmedMinor: bigint;
  currency: Awaited<ReturnType<typeof invoiceCurrencies>>["currency"];
  /** The payments' share per catalog entry when they came in on several (accepted per entry); null: one entry. */
  shares: EntryShare[] | null;
  /** This resolution's number on the invoice (a later payment is resolved again). */
  n: number;
  coveredIds: string[];
  now: string;
  publicBaseUrl: string;
}

/** The merchant keeps what was paid: it is the price, and the fees come out of it. */
async function resolveByAccepting(
  tx: Tx,
  f: Unresolved,
  feePercentText: string,
  settlement: Awaited<ReturnType<typeof invoiceCurrencies>>["settlement"],
): Promise<Result<Invoice, ResolutionError>> {
  const { invoice, currency, confirmedMinor, now } = f;
  const feePercent = parseDecimal(feePercentText);
  if (feePercent === null) throw invariantViolation(`merchant ${invoice.merchantId} has a decimal fee percent`);
  // What was paid is the price: the payer is not asked for more, the fees come out of it.
  const priced = priceInvoice(confirmedMinor, currency, { feePercent, feesPaidBy: "merchant" });
  if (!priced.ok) return err("nothing_to_resolve", "the confirmed amount does not cover the fees");
  const moved = await applyTransition(tx, invoice, "completed", "resolution_accepted", now, f.publicBaseUrl);
  if (!moved.ok) return err("invoice_status_changed", moved.detail);
  const input = {
    invoiceId: invoice.id,
    merchantId: invoice.merchantId,
    currency,
    settlement,
    finalAmountMinor: confirmedMinor,
    merchantFeeMinor: priced.value.merchantFee,
    networkAndOtherFeesMinor: priced.value.networkAndOtherFees,
    merchantReceiveAmountMinor: priced.value.merchantReceiveAmount,
    settledMinor: confirmedMinor,
  };
  const completion =
    f.shares === null ? completionMovement(input) : splitCompletionMovement(input, f.shares, currency.decimals);
  const posted = await postMovement(tx, completion.movement, now);
  if (!posted.ok) throw invariantViolation(`a resolution credit is posted once (${posted.error})`);
  await markResolved(tx, invoice.id, "accept", f.coveredIds, now);
  return ok(moved.value);
}

/**
 * The money reaches the merchant's balance and leaves it through the refund payout at once: the
 * one payout machinery sends it, and a failed payout leaves it with the merchant.
 */
async function resolveByRefunding(
  tx: Tx,
  f: Unresolved,
  addressText: string,
  railPolicy: PayoutRailPolicy | undefined,
): Promise<Result<void, ResolutionError>> {
  const { invoice, currency, confirmedMinor, n, now } = f;
  const address = checkEvmAddress(addressText);
  if (!address.ok) return err("invalid_address", address.detail);
  const refundMinor = confirmedMinor - currency.networkFeeMinor;
  if (refundMinor <= 0n) return err("nothing_to_resolve", "the confirmed amount does not cover the network fee");
  await postResolutionCredit(tx, f, refundMinor);
  const requestKey = resolutionRefundId(invoice.id, n);
  if (!(await claimResolutionRequest(tx, invoice, requestKey, address.value, now)))
    return err("invoice_already_resolved", "the invoice already has a resolution refund");
  const recorded = await insertRefund(tx, {
    requestKey,
    merchantId: invoice.merchantId,
    invoiceId: invoice.id,
    type: "crypto",
    currency: currency.ticker,
    amountMinor: refundMinor,
    debitCurrency: currency.ticker,
    debitMinor: refundMinor,
    toAddress: address.value,
    withdrawToSameAddress: false,
    reason: "resolution of a late or partial payment",
    createdAt: now,
    // A later resolution's refund returns later money beside the first one's, which may still be
    // live: it is recorded as one of several (product §25), so the interface's one full refund per
    // invoice stays the first (docs/chain-faults.md, "Resolutions name their payments").
    ...(n > 1 ? { partial: { paidShareMinor: confirmedMinor, networkFeePaidBy: "payer" as const } } : {}),
  });
  if (!recorded) return err("invoice_already_resolved", "the invoice already has a refund");
  const accepted = await acceptPayout(
    tx,
    {
      requestKey,
      operation: "refund",
      merchantId: invoice.merchantId,
      cause: "refund",
      debit: { currency: currency.ticker, amount: refundMinor },
      payout: { currency: currency.ticker, amount: refundMinor, destination: address.value },
      memo: `refund of invoice ${invoice.id} (resolution)`,
      railPolicy,
    },
    now,
  );
  if (!accepted.ok) throw invariantViolation("the resolution credit covers its refund");
  await markResolved(tx, invoice.id, "refund", f.coveredIds, now);
  return ok(undefined);
}

async function postResolutionCredit(tx: Tx, f: Unresolved, refundMinor: bigint): Promise<void> {
  const { invoice, currency, confirmedMinor, n } = f;
  const credit = await postMovement(
    tx,
    movement({
      cause: "invoice",
      causeId: invoice.id,
      kind: n === 1 ? "resolution_refund" : `resolution_refund:${n}`,
      memo: `invoice ${invoice.id} resolved: refund to the payer`,
      postings: [
        { account: SYSTEM_ACCOUNTS.incomingPayments, currency: currency.ticker, amount: -confirmedMinor },
        ...(currency.networkFeeMinor > 0n
          ? [{ account: SYSTEM_ACCOUNTS.networkFees, currency: currency.ticker, amount: currency.networkFeeMinor }]
          : []),
        { account: merchantAccount(invoice.merchantId), currency: currency.ticker, amount: refundMinor },
      ],
    }),
    f.now,
  );
  if (!credit.ok) throw invariantViolation(`a resolution credit is posted once (${credit.error})`);
}
