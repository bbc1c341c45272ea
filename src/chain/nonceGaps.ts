// No hot-wallet nonce is abandoned (product §19): a nonce below the next one that no stored transaction will use is, past a bound, filled by a zero-value transfer of the hot wallet to itself through the outbox (which broadcasts, follows and replaces it); its settle handler ledgers the gas.
import { postOperatorGas } from "../store/hotTransactions.ts";
import { recordNonceGaps, usedNonces } from "../store/nonceFills.ts";
import type { Store, Tx } from "../store/store.ts";
import { broadcastHotTransaction, type HotTxRequest, storeHotTransactions, walletNow } from "./outbox.ts";
import type { HotTxHandler } from "./outboxFollowing.ts";
import type { ChainPayoutOptions, PayoutChain } from "./payoutTransactions.ts";

/** Nonces looked at past the chain's: bounds one check (the in-flight bound keeps real gaps far below it). */
export const MAX_NONCES_CHECKED = 256;
/** Gas of a plain transfer: a fill carries no data. */
const FILL_GAS = 21_000n;

/** Nonces of [latest, next) that no stored transaction will use, under the caller's view. */
async function missingNonces(tx: Tx, chain: PayoutChain, latest: number, next: number): Promise<number[]> {
  const to = Math.min(next, latest + MAX_NONCES_CHECKED);
  const used = await usedNonces(tx, chain.network, chain.hot.address, latest, to);
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

/** What a fill is for: the gap at its nonce. Mined or not (another transaction took the nonce), the gap is gone; its gas is the operator's. */
export function fillHandler(nativeCurrency: string | null): HotTxHandler {
  return {
    settle: async (tx, mined, receipt, at) => {
      const memo = `gas of the transfer that filled nonce ${mined.nonce} (${mined.network})`;
      const posting = { cause: "nonce_fill" as const, causeId: mined.id, kind: "gas", memo };
      await postOperatorGas(tx, posting, nativeCurrency, receipt.gasUsed * receipt.effectiveGasPrice, at);
    },
    lost: async () => {},
  };
}

/** A zero-value transfer of the hot wallet to itself at `nonce`, stored only while no other stored transaction uses the nonce. */
function fillRequest(chain: PayoutChain, nonce: number): HotTxRequest {
  return {
    purpose: "fill",
    purposeId: `${chain.network}:${nonce}`,
    call: { to: chain.hot.address, value: 0n },
    gas: FILL_GAS,
    tokens: null,
    claim: async (tx: Tx) => {
      const used = await usedNonces(tx, chain.network, chain.hot.address, nonce, nonce + 1);
      return !used.nonces.has(nonce);
    },
  };
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
  let moved = 0;
  const next = await storedNextNonce(store, chain);
  const at = new Date(options.now()).toISOString();
  const missing = next === null || next <= latest.value ? [] : await missingNonces(store, chain, latest.value, next);
  const since = await store.transaction((tx) => recordNonceGaps(tx, chain.network, missing.length, at));
  if (missing.length === 0 || since === null) return moved;
  if (Date.parse(at) - Date.parse(since) < chain.replaceAfterMs) return moved;
  // The chain's nonce again: a transaction mined since the first read is no gap.
  const [wallet, mined] = await Promise.all([walletNow(chain), chain.client.nonce(chain.hot.address, "latest")]);
  if (wallet === null || !mined.ok) return moved;
  const gaps = missing.filter((n) => n >= mined.value);
  const signed = await storeHotTransactions(
    store,
    chain,
    gaps.map((n) => fillRequest(chain, n)),
    { wallet, reserve: "fill", nonces: gaps, at, log: options.log },
  );
  for (const fill of signed) {
    options.log.warn(
      { network: chain.network, nonce: fill.nonce, hash: fill.hash },
      "nonce gap filled: zero-value transfer to the hot wallet",
    );
    await broadcastHotTransaction(store, chain, fill, options);
    moved++;
  }
  return moved;
}
