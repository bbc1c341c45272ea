// When a hot-wallet transaction counts as final: in a block the network's confirmations deep, never at first sight (a shallower block may be reorganised away). A domain rule over the ChainClient port, so that use cases (the factory deployment) and chain code (payouts, flushes, nonce fills, sweeps and their gas fundings) settle through the same one.
import type { ChainClient, ChainError, ChainReceipt, Hex } from "./chain.ts";
import { confirmationsOf } from "./hotTransaction.ts";
import { ok, type Result } from "./result.ts";

/** One of the transactions signed at a nonce, in a block; `deep` once that block is the network's `confirmations` deep. */
export interface Landed<T> {
  tx: T;
  receipt: ChainReceipt;
  deep: boolean;
}

/**
 * The first of `candidates` (the transactions signed at one nonce, or one transaction) that the
 * node has a receipt for, and whether it is deep enough for its purpose to be settled. Null: none
 * is in a block (not mined yet, or its block was reorganised away: it waits, broadcast again or
 * replaced at its nonce). `head` is the caller's view of the chain's head; without it the node is
 * asked once a receipt is found.
 */
export async function landedOf<T>(
  client: ChainClient,
  candidates: readonly T[],
  hashOf: (candidate: T) => Hex,
  confirmations: number,
  head?: bigint,
): Promise<Result<Landed<T> | null, ChainError>> {
  for (const tx of candidates) {
    const receipt = await client.receipt(hashOf(tx));
    if (!receipt.ok) return receipt;
    if (receipt.value === null) continue;
    let at = head;
    if (at === undefined) {
      const asked = await client.headBlockNumber();
      if (!asked.ok) return asked;
      at = asked.value;
    }
    const deep = confirmationsOf(receipt.value.blockNumber, at) >= BigInt(confirmations);
    return ok({ tx, receipt: receipt.value, deep });
  }
  return ok(null);
}
