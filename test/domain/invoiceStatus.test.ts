// The invoice state machine against product §5, pair by pair: every one of the 9x9 (from, to) pairs is checked.
import { describe, expect, it } from "vitest";
import {
  checkTransition,
  findTransition,
  INVOICE_STATUSES,
  INVOICE_TRANSITIONS,
  type InvoiceStatus,
  isPayable,
  type TransitionCause,
} from "../../src/domain/invoiceStatus.ts";

/** Product §5's table, written out independently of the implementation: "from>to" -> cause. */
const PRODUCT_TABLE: Record<string, TransitionCause> = {
  "pending>processing": "payment_seen",
  "pending>completed": "payments_cover",
  "processing>completed": "payments_cover",
  "pending>aml_check": "aml_flagged",
  "processing>aml_check": "aml_flagged",
  "aml_check>completed": "aml_cleared",
  "aml_check>aml_block": "aml_blocked",
  "aml_check>processing": "aml_cleared",
  "pending>expired": "expired",
  "processing>failed": "expired",
  "completed>refund_processing": "refund_accepted",
  "refund_processing>refunded": "refund_completed",
  "refund_processing>completed": "refund_failed",
  // Product §12: a late, partial or stranded payment accepted by the operator or the owner.
  "failed>completed": "resolution_accepted",
  "expired>completed": "resolution_accepted",
};

const ALL_CAUSES: TransitionCause[] = [
  "resolution_accepted",
  "payment_seen",
  "payments_cover",
  "aml_flagged",
  "aml_cleared",
  "aml_blocked",
  "expired",
  "refund_accepted",
  "refund_completed",
  "refund_failed",
];

const pairs: [InvoiceStatus, InvoiceStatus][] = INVOICE_STATUSES.flatMap((from) =>
  INVOICE_STATUSES.map((to) => [from, to] as [InvoiceStatus, InvoiceStatus]),
);

describe("invoice state machine", () => {
  it("has exactly the nine statuses of the interface", () => {
    expect([...INVOICE_STATUSES].sort()).toEqual(
      [
        "pending",
        "processing",
        "completed",
        "refund_processing",
        "failed",
        "expired",
        "refunded",
        "aml_check",
        "aml_block",
      ].sort(),
    );
    expect(pairs).toHaveLength(81);
  });

  it("holds exactly the rows of product §5, no more", () => {
    const rows = INVOICE_TRANSITIONS.map((t) => `${t.from}>${t.to}:${t.cause}`).sort();
    const expected = Object.entries(PRODUCT_TABLE)
      .map(([pair, cause]) => `${pair}:${cause}`)
      .sort();
    expect(rows).toEqual(expected);
  });

  it.each(pairs)("%s -> %s is allowed exactly when product §5 allows it, and only for its cause", (from, to) => {
    const cause = PRODUCT_TABLE[`${from}>${to}`];
    if (cause === undefined) {
      expect(findTransition(from, to)).toBeNull();
      for (const c of ALL_CAUSES) expect(checkTransition(from, to, c).ok).toBe(false);
      return;
    }
    expect(findTransition(from, to)).toEqual({ from, to, cause });
    for (const c of ALL_CAUSES) {
      const checked = checkTransition(from, to, c);
      expect(checked.ok).toBe(c === cause);
      if (!checked.ok) expect(checked.error).toBe("transition_refused");
    }
  });

  it("takes payments only while pending, processing or in aml_check", () => {
    const payable = INVOICE_STATUSES.filter(isPayable);
    expect(payable.sort()).toEqual(["aml_check", "pending", "processing"]);
  });
});
