// What one pass of the scanner worker reads once and hands to its scan, sweeps and flushes (product §32): the currency catalog, and the node's head once the scan has read it.
import { type Currency, isFiat } from "../domain/currencies.ts";
import { listCurrencies } from "../store/currencies.ts";
import type { Tx } from "../store/store.ts";

/**
 * A value of one pass, never kept beyond it: an entry the operator adds while the service runs
 * (in this process or another sharing the database) is read by the next pass. Kept across passes,
 * it would need invalidation across processes; one read per pass costs one small query.
 */
export interface PassReads {
  /** The whole currency catalog as the pass began. */
  readonly catalog: readonly Currency[];
  /**
   * The network's head as this pass's scan read it; null before (the sweeps' and flushes' outbox
   * then asks the node). A head some seconds old only delays a settlement: a transaction counts
   * as deep by it, never deeper than the chain is.
   */
  readonly head: bigint | null;
}

/** The catalog read of a pass (its one read of the currencies). */
export async function readPassCatalog(tx: Tx): Promise<readonly Currency[]> {
  return listCurrencies(tx);
}

/** The reads of a pass for its callers outside the worker (tests, tools): the catalog now, no head read yet. */
export async function freshPassReads(tx: Tx): Promise<PassReads> {
  return { catalog: await readPassCatalog(tx), head: null };
}

/** The native coin of `network` in the catalog (no contract), or null. */
export function nativeCoinOf(catalog: readonly Currency[], network: string): Currency | null {
  return catalog.find((c) => c.network === network && !isFiat(c) && c.contractAddress === null) ?? null;
}
