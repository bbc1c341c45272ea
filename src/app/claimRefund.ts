// Use cases of refund claim links (product §25): reading a claim for its page, claiming it once with the payer's address, and returning unclaimed refunds to the merchant after 30 days.

import type { Wallet } from "../domain/chain.ts";
import type { DepositRefundObject } from "../domain/depositAddresses.ts";
import { checkEvmAddress } from "../domain/evmAddress.ts";
import { SYSTEM_ACCOUNTS } from "../domain/ledger.ts";
import type { PayoutRailPolicy } from "../domain/payout.ts";
import { type PublicRefundRequestObject, publicRefundRequest } from "../domain/payoutRequests.ts";
import type { RefundStatus } from "../domain/refund.ts";
import { assert } from "../domain/result.ts";
import { findCurrency } from "../store/currencies.ts";
import { lockInvoice } from "../store/invoices.ts";
import { findMerchant } from "../store/merchants.ts";
import { queueClaimedPayout, reverseUnqueuedDebit } from "../store/payouts.ts";
import { recordRefundStepEvent } from "../store/refundEvents.ts";
import {
  findRefundView,
  isInvoiceRefund,
  latestDepositRefund,
  leaveRefundProcessing,
  returnDepositToHold,
} from "../store/refunds.ts";
import type { RefundClaimsTable } from "../store/schema.ts";
import { nowIso, type Store, type Tx } from "../store/store.ts";
import type { ServiceContext } from "./context.ts";
import { destinationNotThePayers } from "./ownDestinations.ts";
import { type Refusal, refuse, withRefusals } from "./refusal.ts";
import { screenDestination } from "./screenDestination.ts";

export type ClaimStatus = "open" | "claimed" | "expired";

/** What the payer's claim page shows. */
export interface ClaimView {
  status: ClaimStatus;
  expiresAt: string;
  /** Where the refund goes, once claimed. */
  address: string | null;
  /** Whose refund it is, as the payer's pages show a merchant. */
  merchant: { name: string | null; logo: string | null; whitelabeling: boolean };
  currency: string;
  network: string;
  decimals: number;
  /** What the payer receives: the refund less the network fee when the payer bears it. */
  payoutMinor: bigint;
  /** The refund's status (processing until its payout settles); the page shows no refund object. */
  refundStatus: RefundStatus;
}

/**
 * What a claim answers: an invoice's refund as its request object; a held deposit's refund as its
 * deposit carries it (product §30: a refund request object always names an invoice).
 */
export type ClaimedRefund = { request: PublicRefundRequestObject } | { refund: DepositRefundObject };

export type ClaimRefusal =
  | "refund_claim_not_found"
  | "refund_claim_closed"
  | "refund_claim_expired"
  | "invalid_address"
  | "destination_screened"
  | "screening_unavailable";

/** An open claim whose time ran out reads as expired, even before the worker returned its money. */
function statusAt(row: RefundClaimsTable, now: string): ClaimStatus {
  if (row.status === "open" && row.expires_at <= now) return "expired";
  assert(row.status === "open" || row.status === "claimed" || row.status === "expired", "a claim has a known status");
  return row.status;
}

/** What the payout sends: the payouts leg of the refund's debit movement, exact whatever fees became since. */
async function payoutAmount(tx: Tx, refundId: string, currency: string): Promise<bigint> {
  const row = await tx.db
    .selectFrom("ledger_movements")
    .innerJoin("ledger_entries", "ledger_entries.movement_id", "ledger_movements.id")
    .select("ledger_entries.amount")
    .where("ledger_movements.cause", "=", "refund")
    .where("ledger_movements.cause_id", "=", refundId)
    .where("ledger_movements.kind", "=", "debit")
    .where("ledger_entries.account", "=", SYSTEM_ACCOUNTS.payouts)
    .where("ledger_entries.currency", "=", currency)
    .executeTakeFirst();
  assert(row !== undefined, `claim refund ${refundId} has its debit`);
  return BigInt(row.amount);
}

async function findClaim(tx: Tx, token: string, lock: boolean): Promise<RefundClaimsTable | undefined> {
  return tx.db
    .selectFrom("refund_claims")
    .selectAll()
    .where("token", "=", token)
    .$if(lock && tx.dialect === "postgres", (qb) => qb.forUpdate())
    .executeTakeFirst();
}

/** The claim behind a link, for its page; null for an unknown token. */
export async function readClaim(store: Store, token: string): Promise<ClaimView | null> {
  const row = await findClaim(store, token, false);
  if (!row) return null;
  const view = await findRefundView(store, row.refund_id);
  assert(view !== null, `claim ${row.refund_id} has its refund`);
  const currency = await findCurrency(store, view.currency);
  const merchant = await findMerchant(store, row.merchant_id);
  assert(currency !== null && merchant !== null, `claim ${row.refund_id} has its currency and merchant`);
  return {
    status: statusAt(row, nowIso()),
    expiresAt: row.expires_at,
    address: row.address,
    merchant: { name: merchant.merchantName, logo: merchant.logo, whitelabeling: merchant.whitelabeling },
    currency: currency.ticker,
    network: currency.network,
    decimals: currency.decimals,
    payoutMinor: await payoutAmount(store, row.refund_id, view.currency),
    refundStatus: view.status,
  };
}

/** The claimed refund as the claim answers it (ClaimedRefund). */
async function claimedRefund(tx: Tx, refundId: string): Promise<ClaimedRefund> {
  const view = await findRefundView(tx, refundId);
  assert(view !== null, `claim ${refundId} has its refund`);
  if (isInvoiceRefund(view)) return { request: publicRefundRequest(view) };
  assert(view.depositId != null, `refund ${refundId} names an invoice or a deposit`);
  const refund = await latestDepositRefund(tx, view.depositId);
  assert(refund?.id === refundId, `claim ${refundId} is its deposit's latest refund`);
  return { refund };
}

/** Claims an open claim once, in one transaction: the address is checked, the payout queued there, the event recorded. */
interface ClaimAttempt {
  token: string;
  addressText: string;
  now: string;
  railPolicy: PayoutRailPolicy | undefined;
  /** The service's hot wallet: it and what it owns are no payer's destination. */
  wallet: Wallet | null;
}

async function claimOnce(tx: Tx, attempt: ClaimAttempt): Promise<ClaimedRefund> {
  const { token, addressText, now, railPolicy, wallet } = attempt;
  const row = await findClaim(tx, token, true);
  if (!row) return refuse("refund_claim_not_found", "No refund to claim at this link.", "/");
  const status = statusAt(row, now);
  if (status === "claimed") return refuse("refund_claim_closed", "This refund was already claimed.", "/");
  if (status === "expired") {
    return refuse("refund_claim_expired", "This refund link expired; the amount went back to the merchant.", "/");
  }
  const address = checkEvmAddress(addressText.trim());
  if (!address.ok) return refuse("invalid_address", `The address is not valid: ${address.detail}.`, "/address");
  const notThePayers = await destinationNotThePayers(tx, wallet, address.value);
  if (notThePayers !== null) {
    return refuse("invalid_address", `The address cannot receive the refund: ${notThePayers}.`, "/address");
  }
  const claimed = await tx.db
    .updateTable("refund_claims")
    .set({ status: "claimed", address: address.value, claimed_at: now, updated_at: now })
    .where("token", "=", token)
    .where("status", "=", "open")
    .executeTakeFirst();
  // PostgreSQL holds the row; SQLite serializes writers: nobody claimed it since it was read.
  assert(claimed.numUpdatedRows === 1n, `claim of refund ${row.refund_id} is open`);
  const refund = await tx.db
    .updateTable("refunds")
    .set({ to_address: address.value })
    .where("request_id", "=", row.refund_id)
    .returning(["currency"])
    .executeTakeFirstOrThrow();
  await queueClaimedPayout(
    tx,
    {
      requestKey: row.refund_id,
      operation: "refund",
      merchantId: row.merchant_id,
      cause: "refund",
      payout: {
        currency: refund.currency,
        amount: await payoutAmount(tx, row.refund_id, refund.currency),
        destination: address.value,
      },
      railPolicy,
    },
    now,
  );
  await recordRefundStepEvent(tx, { merchantId: row.merchant_id, refundId: row.refund_id, step: "claimed" }, now);
  return claimedRefund(tx, row.refund_id);
}

/** The payer claims a refund at its link with an address: once; a refusal changes nothing. */
export async function claimRefund(
  ctx: Pick<ServiceContext, "store" | "screening" | "wallet">,
  token: string,
  address: string,
  /** What this service pays out by: the payout's rail is chosen from it (app/payoutProcessors.ts payoutRailPolicy). */
  railPolicy?: PayoutRailPolicy,
): Promise<{ ok: true; value: ClaimedRefund } | { ok: false; refusal: Refusal<ClaimRefusal> }> {
  // The payer's address is screened first, outside the transaction (product §21).
  const screened = await screenDestination(ctx, address);
  if (screened !== null) return { ok: false, refusal: screened };
  return withRefusals<ClaimedRefund, ClaimRefusal>(() =>
    ctx.store.transaction((tx) =>
      claimOnce(tx, { token, addressText: address, now: nowIso(), railPolicy, wallet: ctx.wallet }),
    ),
  );
}

/** Claims handled per transaction by the expiry worker: bounds lock time whatever the backlog. */
export const CLAIM_EXPIRY_BATCH_SIZE = 50;

/** An open claim whose time ran out, as the expiry worker takes it: its refund names an invoice or a held deposit. */
interface DueClaim {
  token: string;
  refund_id: string;
  merchant_id: string;
  invoice_id: string | null;
  deposit_id: string | null;
}

/**
 * One expired claim returned, inside the batch's transaction: an invoice's refund credits the
 * merchant back and its invoice leaves refund_processing; a held deposit's refund credits the hold
 * back and the deposit is `held` again, for the merchant to decide anew (docs/deposit-addresses.md).
 */
async function expireClaim(tx: Tx, claim: DueClaim, now: string, publicBaseUrl: string): Promise<void> {
  // Invoice (or deposit), then balance rows: the order refund acceptance takes them in.
  const invoice = claim.invoice_id === null ? null : await lockInvoice(tx, claim.invoice_id);
  if (claim.invoice_id !== null) assert(invoice !== null, `claim ${claim.refund_id} has its invoice`);
  await tx.db
    .updateTable("refund_claims")
    .set({ status: "expired", updated_at: now })
    .where("token", "=", claim.token)
    .execute();
  await tx.db.updateTable("refunds").set({ status: "failed" }).where("request_id", "=", claim.refund_id).execute();
  if (invoice === null) {
    assert(claim.deposit_id !== null, `claim ${claim.refund_id} names an invoice or a deposit`);
    await returnDepositToHold(tx, claim.deposit_id, claim.refund_id, now);
  }
  await reverseUnqueuedDebit(
    tx,
    { cause: "refund", requestKey: claim.refund_id },
    "refund claim expired: debit credited back",
    now,
  );
  if (invoice !== null) await leaveRefundProcessing(tx, invoice, claim.refund_id, "failed", now, publicBaseUrl);
  await recordRefundStepEvent(tx, { merchantId: claim.merchant_id, refundId: claim.refund_id, step: "expired" }, now);
}

/**
 * Returns refunds nobody claimed in time: the claim expires, the refund fails, its debit is
 * credited back where it came from (expireClaim), and `refund.expired` is recorded, in one
 * transaction per batch. Several processes take disjoint claims (SKIP LOCKED).
 */
export async function expireRefundClaims(store: Store, now: string, limit: number, publicBaseUrl: string) {
  return store.transaction(async (tx) => {
    const due = await tx.db
      .selectFrom("refund_claims")
      .innerJoin("refunds", "refunds.request_id", "refund_claims.refund_id")
      .select([
        "refund_claims.token",
        "refund_claims.refund_id",
        "refund_claims.merchant_id",
        "refunds.invoice_id",
        "refunds.deposit_id",
      ])
      .where("refund_claims.status", "=", "open")
      .where("refund_claims.expires_at", "<=", now)
      .orderBy("refund_claims.expires_at")
      .limit(limit)
      .$if(tx.dialect === "postgres", (qb) => qb.forUpdate("refund_claims").skipLocked())
      .execute();
    for (const claim of due) await expireClaim(tx, claim, now, publicBaseUrl);
    return due.length;
  });
}
