// The one lookup of the state tables (invoice status, payout state, payout transaction state): a pair is allowed only when its row is listed.

/** A row of a state table: the other fields (cause, why) are the table's own. */
export interface TableRow<S extends string> {
  readonly from: S;
  readonly to: S;
}

/** The table's row for (from, to), or null when the table does not list the pair (then it is refused). */
export function transition<R extends TableRow<string>>(table: readonly R[], from: R["from"], to: R["to"]): R | null {
  return table.find((row) => row.from === from && row.to === to) ?? null;
}
