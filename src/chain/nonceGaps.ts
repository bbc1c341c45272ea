// No hot-wallet nonce is abandoned (product §19): a nonce below the next one that no stored transaction will use is, past a bound, filled by a zero-value transfer of the hot wallet to itself, broadcast until mined (settled once deep) and replaced with a higher fee when it is not mined in time.
import { keccak256, parseTransaction } from "viem";
import type { Hex } from "../domain/chain.ts";
import { landedOf } from "../domain/finality.ts";
import { bumpFees, type Fees, initialFees } from "../domain/payoutTransaction.ts";
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
import type { ChainPayoutOptions, PayoutChain } from "./payoutTransactions.ts";

/** Nonces looked at past the chain's: bounds one check (the in-flight bound keeps real gaps far below it). */
export const MAX_NONCES_CHECKED = 256;
/** Gas of a plain transfer: a fill carries no data. */
const FILL_GAS = 21_000n;
/** Bound on the fills one nonce may have (the first and its replacements), as for fundings and payouts. */
export const FILL_MAX_REPLACEMENTS = 8;

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

/**
 * Follows open fills, per nonce: a mined one is settled once the network's confirmations deep (its
 * gas ledgered) and the others at its nonce marked replaced (in a shallower block it waits); a
 * nonce the chain passed otherwise marks them all replaced; the rest are broadcast again, and a fill not mined within the replacement delay is replaced at its nonce with
 * a higher fee (replaceFill). Every fill of a nonce stays open until one is mined, since any of them
 * may be: whichever is, its gas is the one ledgered.
 */
async function followFills(store: Store, chain: PayoutChain, latest: number, options: ChainPayoutOptions) {
  let moved = 0;
  const byNonce = new Map<number, NonceFill[]>();
  for (const fill of await openNonceFills(store, chain.network, MAX_NONCES_CHECKED)) {
    byNonce.set(fill.nonce, [...(byNonce.get(fill.nonce) ?? []), fill]);
  }
  for (const [nonce, fills] of byNonce) {
    const landed = await landedOf(chain.client, fills, (f) => f.hash as Hex, chain.confirmations);
    if (!landed.ok) return moved;
    // In a block not yet deep: it waits as it is (its block may be reorganised away; then it is sent again).
    if (landed.value !== null && !landed.value.deep) continue;
    const at = new Date(options.now()).toISOString();
    const mined = landed.value;
    if (mined || latest > nonce) {
      moved += await store.transaction(async (tx) => {
        let settled = 0;
        for (const fill of fills) {
          const outcome =
            fill.id === mined?.tx.id
              ? {
                  state: "mined" as const,
                  gasWei: mined.receipt.gasUsed * mined.receipt.effectiveGasPrice,
                  nativeCurrency: chain.nativeCurrency,
                }
              : { state: "replaced" as const, reason: "another transaction used the nonce" };
          if (await settleNonceFill(tx, fill, outcome, at)) settled++;
        }
        return settled;
      });
      continue;
    }
    // Signed in order, so the last is the newest (highest fee): the others would be refused as underpriced.
    const newest = fills[fills.length - 1] as NonceFill;
    if (Date.parse(at) - Date.parse(newest.createdAt) >= chain.replaceAfterMs && fills.length < FILL_MAX_REPLACEMENTS) {
      const replacement = await replaceFill(store, chain, newest, at, options);
      if (replacement !== null) {
        await broadcastFill(chain, replacement, options);
        moved++;
        continue;
      }
    }
    await broadcastFill(chain, newest, options);
  }
  return moved;
}

/**
 * A fill not mined in time, signed again at its nonce with fees at least 10% higher (and what the
 * node suggests now), stored before it is broadcast. Under the network's nonce lock, and only if
 * `newest` is still the newest fill of its nonce: two processes never replace one fill twice. Null:
 * not replaced (the node gave no fees, the operator's fee cap is reached, or another process did).
 */
async function replaceFill(
  store: Store,
  chain: PayoutChain,
  newest: NonceFill,
  at: string,
  options: ChainPayoutOptions,
): Promise<{ raw: string; hash: string; nonce: number } | null> {
  const suggested = await chain.client.fees();
  if (!suggested.ok) return null;
  const previous = parseTransaction(newest.raw as Hex);
  const { gasPrice, maxFeePerGas, maxPriorityFeePerGas } = suggested.value;
  const fees = bumpFees(
    { maxFeePerGas: previous.maxFeePerGas ?? 0n, maxPriorityFeePerGas: previous.maxPriorityFeePerGas ?? 0n },
    { maxFeePerGas: maxFeePerGas ?? gasPrice, maxPriorityFeePerGas: maxPriorityFeePerGas ?? gasPrice },
    chain.maxFeePerGasWei,
  );
  if (!fees.ok) {
    options.log.warn(
      { network: chain.network, nonce: newest.nonce },
      "nonce fill not replaced: the fee cap is reached",
    );
    return null;
  }
  return store.transaction(async (tx) => {
    await lockHotNonce(tx, chain.network);
    const open = (await openNonceFills(tx, chain.network, MAX_NONCES_CHECKED)).filter((f) => f.nonce === newest.nonce);
    if (open[open.length - 1]?.id !== newest.id) return null;
    const fill = await signFill(chain, newest.nonce, fees.value);
    await insertNonceFill(tx, { network: chain.network, fromAddress: chain.hot.address, ...fill }, at);
    options.log.warn({ network: chain.network, nonce: fill.nonce, hash: fill.hash }, "nonce fill replaced: higher fee");
    return fill;
  });
}

/** A zero-value transfer of the hot wallet to itself at `nonce`. */
async function signFill(
  chain: PayoutChain,
  nonce: number,
  fee: Fees,
): Promise<{ raw: string; hash: string; nonce: number }> {
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
  return { raw, hash: keccak256(raw), nonce };
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
      const fill = await signFill(chain, nonce, fee);
      await insertNonceFill(tx, { network: chain.network, fromAddress: chain.hot.address, ...fill }, at);
      fills.push(fill);
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
