// No hot-wallet nonce is abandoned (product §19): a nonce below the next one that no stored transaction will use is, past a bound, filled by a zero-value transfer of the hot wallet to itself, broadcast until mined.
import { keccak256, parseTransaction } from "viem";
import type { Hex } from "../domain/chain.ts";
import { initialFees } from "../domain/payoutTransaction.ts";
import {
  insertNonceFill,
  type NonceFill,
  openNonceFills,
  recordNonceGaps,
  settleNonceFill,
  usedNonces,
} from "../store/nonceFills.ts";
import { lockHotNonce } from "../store/payoutTransactions.ts";
import type { Store, Tx } from "../store/store.ts";
import type { ChainPayoutOptions, PayoutChain } from "./payouts.ts";

/** Nonces looked at past the chain's: bounds one check (the in-flight bound keeps real gaps far below it). */
export const MAX_NONCES_CHECKED = 256;
/** Gas of a plain transfer: a fill carries no data. */
const FILL_GAS = 21_000n;

/** Nonces of [latest, next) that no stored transaction will use, under the caller's view. */
async function missingNonces(tx: Tx, chain: PayoutChain, latest: number, next: number): Promise<number[]> {
  const to = Math.min(next, latest + MAX_NONCES_CHECKED);
  const used = await usedNonces(tx, chain.network, chain.hot.address, latest, to);
  for (const raw of used.unknownFundings) {
    const nonce = parseTransaction(raw as Hex).nonce;
    if (nonce !== undefined) used.nonces.add(nonce);
  }
  const missing: number[] = [];
  for (let n = latest; n < to; n++) if (!used.nonces.has(n)) missing.push(n);
  return missing;
}

/** The stored next nonce of this hot wallet (null: none counted for it). */
async function storedNextNonce(tx: Tx, chain: PayoutChain): Promise<number | null> {
  const row = await tx.db
    .selectFrom("networks")
    .select(["hot_nonce", "hot_nonce_address"])
    .where("name", "=", chain.network)
    .executeTakeFirst();
  if (!row || row.hot_nonce === null) return null;
  const owner = row.hot_nonce_address;
  if (owner !== null && owner !== undefined && owner !== chain.hot.address.toLowerCase()) return null;
  return Number(row.hot_nonce);
}

/** Follows open fills: mined ones are settled (gas ledgered), lost ones marked, the rest broadcast again. */
async function followFills(store: Store, chain: PayoutChain, latest: number, options: ChainPayoutOptions) {
  let moved = 0;
  for (const fill of await openNonceFills(store, chain.network, MAX_NONCES_CHECKED)) {
    const receipt = await chain.client.receipt(fill.hash as Hex);
    if (!receipt.ok) return moved;
    const at = new Date(options.now()).toISOString();
    if (receipt.value !== null) {
      const gasWei = receipt.value.gasUsed * receipt.value.effectiveGasPrice;
      const outcome = { state: "mined" as const, gasWei, nativeCurrency: chain.nativeCurrency };
      if (await store.transaction((tx) => settleNonceFill(tx, fill, outcome, at))) moved++;
    } else if (latest > fill.nonce) {
      // The transaction it stood in for was mined after all (or another took the nonce): no gap left.
      const outcome = { state: "replaced" as const, reason: "another transaction used the nonce" };
      if (await store.transaction((tx) => settleNonceFill(tx, fill, outcome, at))) moved++;
    } else {
      await broadcastFill(chain, fill, options);
    }
  }
  return moved;
}

async function broadcastFill(
  chain: PayoutChain,
  fill: Pick<NonceFill, "raw" | "hash" | "nonce">,
  options: ChainPayoutOptions,
) {
  const sent = await chain.client.sendRawTransaction(fill.raw as Hex);
  if (!sent.ok) {
    options.log.warn(
      { network: chain.network, nonce: fill.nonce, hash: fill.hash, detail: sent.detail },
      "nonce fill broadcast failed: sent again later",
    );
  }
}

/**
 * One check of a network's hot-wallet nonces. A gap (the chain's nonce below a nonce that no
 * stored transaction will use) is recorded when first seen; once it has lasted `replaceAfterMs`,
 * each missing nonce gets a zero-value transfer to the hot wallet, signed and stored under the
 * network's nonce lock (so two processes never fill one nonce twice) before it is broadcast.
 */
export async function fillNonceGaps(store: Store, chain: PayoutChain, options: ChainPayoutOptions): Promise<number> {
  const latest = await chain.client.nonce(chain.hot.address, "latest");
  if (!latest.ok) return 0;
  let moved = await followFills(store, chain, latest.value, options);
  const next = await storedNextNonce(store, chain);
  const at = new Date(options.now()).toISOString();
  const missing = next === null || next <= latest.value ? [] : await missingNonces(store, chain, latest.value, next);
  const since = await store.transaction((tx) => recordNonceGaps(tx, chain.network, missing.length, at));
  if (missing.length === 0 || since === null) return moved;
  if (Date.parse(at) - Date.parse(since) < chain.replaceAfterMs) return moved;
  // The chain's nonce again: a transaction mined since the first read is no gap.
  const [fees, mined] = await Promise.all([chain.client.fees(), chain.client.nonce(chain.hot.address, "latest")]);
  if (!fees.ok || !mined.ok) return moved;
  const { gasPrice, maxFeePerGas, maxPriorityFeePerGas } = fees.value;
  const fee = initialFees(
    { maxFeePerGas: maxFeePerGas ?? gasPrice, maxPriorityFeePerGas: maxPriorityFeePerGas ?? gasPrice },
    chain.maxFeePerGasWei,
  );
  const signed = await store.transaction(async (tx) => {
    await lockHotNonce(tx, chain.network);
    const stored = await storedNextNonce(tx, chain);
    if (stored === null) return [];
    const fills: { raw: string; hash: string; nonce: number }[] = [];
    for (const nonce of await missingNonces(tx, chain, mined.value, stored)) {
      const raw = await chain.hot.signTransaction({
        type: "eip1559",
        chainId: chain.chainId,
        nonce,
        to: chain.hot.address,
        value: 0n,
        gas: FILL_GAS,
        maxFeePerGas: fee.maxFeePerGas,
        maxPriorityFeePerGas: fee.maxPriorityFeePerGas,
      });
      const hash = keccak256(raw);
      await insertNonceFill(tx, { network: chain.network, fromAddress: chain.hot.address, nonce, hash, raw }, at);
      fills.push({ raw, hash, nonce });
    }
    return fills;
  });
  for (const fill of signed) {
    options.log.warn(
      { network: chain.network, nonce: fill.nonce, hash: fill.hash },
      "nonce gap filled: zero-value transfer to the hot wallet",
    );
    await broadcastFill(chain, fill, options);
    moved++;
  }
  return moved;
}
