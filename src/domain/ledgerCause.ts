// How the dashboard's ledger names the cause of a merchant's entry (product §14): the movement's cause, or reversal and fee for those kinds.

/** What a ledger line shows as its cause: the movement's cause, or `reversal` / `fee` for those kinds of movement. */
export type LedgerEntryCause =
  | "invoice"
  | "withdrawal"
  | "refund"
  | "adjustment"
  | "reversal"
  | "fee"
  | "dispute"
  | "deposit";

export function entryCause(cause: string, kind: string): LedgerEntryCause {
  if (kind === "reversal") return "reversal";
  if (cause === "fee" || kind === "fee" || kind.startsWith("fee:")) return "fee";
  if (cause === "invoice" || cause === "withdrawal" || cause === "refund" || cause === "adjustment") return cause;
  // A card dispute's hold, release or loss (product §20).
  if (cause === "dispute") return "dispute";
  // A transfer to a customer's deposit address (product §30); the cause id is the deposit's id.
  if (cause === "deposit") return "deposit";
  // A cause this list does not know yet is shown as the operator's: never silently as a payment.
  return "adjustment";
}
