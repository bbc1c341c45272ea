// The invoice state machine of product §5 as data: every allowed (from, to, cause), and nothing else is possible.
import { err, ok, type Result } from "./result.ts";
import { transition } from "./stateTable.ts";

/** The nine invoice statuses of docs/merchant-api.md, in the order it lists them. */
export const INVOICE_STATUSES = [
  "pending",
  "processing",
  "completed",
  "refund_processing",
  "failed",
  "expired",
  "refunded",
  "aml_check",
  "aml_block",
] as const;

export type InvoiceStatus = (typeof INVOICE_STATUSES)[number];

/** What made an invoice change status; each transition names one. */
export type TransitionCause =
  /** A first incoming payment is seen, not yet covering or not yet confirmed. */
  | "payment_seen"
  /** Confirmed, unflagged payments cover `final_amount`. */
  | "payments_cover"
  /** Screening flagged a payment. */
  | "aml_flagged"
  /** Screening cleared the flagged payments. */
  | "aml_cleared"
  /** Screening blocked the flagged payments. */
  | "aml_blocked"
  /** `expires_at` passed. */
  | "expired"
  | "refund_accepted"
  | "refund_completed"
  | "refund_failed"
  /** The operator or the owner accepted what a failed or expired invoice received (product §12). */
  | "resolution_accepted";

export interface Transition {
  readonly from: InvoiceStatus;
  readonly to: InvoiceStatus;
  readonly cause: TransitionCause;
}

/** Product §5, row by row. Anything absent here is refused. */
export const INVOICE_TRANSITIONS: readonly Transition[] = [
  { from: "pending", to: "processing", cause: "payment_seen" },
  { from: "pending", to: "completed", cause: "payments_cover" },
  { from: "processing", to: "completed", cause: "payments_cover" },
  { from: "pending", to: "aml_check", cause: "aml_flagged" },
  { from: "processing", to: "aml_check", cause: "aml_flagged" },
  { from: "aml_check", to: "completed", cause: "aml_cleared" },
  { from: "aml_check", to: "aml_block", cause: "aml_blocked" },
  { from: "aml_check", to: "processing", cause: "aml_cleared" },
  { from: "pending", to: "expired", cause: "expired" },
  { from: "processing", to: "failed", cause: "expired" },
  { from: "completed", to: "refund_processing", cause: "refund_accepted" },
  { from: "refund_processing", to: "refunded", cause: "refund_completed" },
  { from: "refund_processing", to: "completed", cause: "refund_failed" },
  { from: "failed", to: "completed", cause: "resolution_accepted" },
  { from: "expired", to: "completed", cause: "resolution_accepted" },
];

/** Statuses in which an invoice still takes new payments (aml_check keeps collecting while screening runs). */
export const PAYABLE_STATUSES: readonly InvoiceStatus[] = ["pending", "processing", "aml_check"];

/**
 * Statuses in which a late payment (one that reached the invoice after it stopped taking payments)
 * is credited to the merchant as an overpayment once confirmed: the invoice was paid in full before
 * (completed, and then perhaps refunded). A late payment to any other waits for a resolution
 * (failed, expired) or for the operator's screening decision (aml_block).
 */
export const CREDITS_LATE_PAYMENTS: readonly InvoiceStatus[] = ["completed", "refund_processing", "refunded"];

export function creditsLatePayments(status: InvoiceStatus): boolean {
  return CREDITS_LATE_PAYMENTS.includes(status);
}

export function isInvoiceStatus(value: string): value is InvoiceStatus {
  return (INVOICE_STATUSES as readonly string[]).includes(value);
}

export function isPayable(status: InvoiceStatus): boolean {
  return PAYABLE_STATUSES.includes(status);
}

/** The table row for (from, to), if the pair is allowed at all. */
export function findTransition(from: InvoiceStatus, to: InvoiceStatus): Transition | null {
  return transition(INVOICE_TRANSITIONS, from, to);
}

/** Accepts exactly the rows of the table: the pair must be allowed and for this cause. */
export function checkTransition(
  from: InvoiceStatus,
  to: InvoiceStatus,
  cause: TransitionCause,
): Result<Transition, "transition_refused"> {
  const row = findTransition(from, to);
  if (row === null || row.cause !== cause) return err("transition_refused", `${from} -> ${to} (${cause})`);
  return ok(row);
}
