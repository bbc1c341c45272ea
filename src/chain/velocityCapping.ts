// The velocity cap at the payout planner (product §31): values queued payouts in USD at the live rates, holds back those over the network's cap, and checks again under the hot wallet's nonce lock, where every process signing for the network takes its turn.
import { usdValueMinor } from "../domain/rates.ts";
import {
  AWAITING_VELOCITY_CAP,
  type CappedPayout,
  fitsVelocityCap,
  payoutsWithinCap,
  VELOCITY_WINDOW_MS,
} from "../domain/velocityCap.ts";
import { findCurrency } from "../store/currencies.ts";
import { reportPayoutProgress } from "../store/payoutTransactions.ts";
import { liveRate } from "../store/rateReadings.ts";
import type { Store, Tx } from "../store/store.ts";
import { findVelocityCap, recordVelocitySpend, spentSince } from "../store/velocityCaps.ts";
import type { ChainPayoutOptions } from "./payoutTransactions.ts";

interface QueuedPayout {
  requestKey: string;
  currency: string;
  amount: string;
  processorStatus: string | null;
}

/** One batch's view of the cap: each payout's value, and whether an earlier payout of the batch was held back. */
export interface CapGate {
  readonly network: string;
  readonly values: ReadonlyMap<string, bigint | null>;
  /** Set once a payout is held back under the lock: those behind it in the batch wait too. */
  closed: boolean;
}

/** The USD cents of each payout at its currency's live rate now (null: no fresh rate). */
async function valuesOf(tx: Tx, queued: readonly QueuedPayout[], nowMs: number): Promise<CappedPayout[]> {
  const values: CappedPayout[] = [];
  for (const p of queued) {
    const currency = await findCurrency(tx, p.currency);
    const rate = currency === null ? null : await liveRate(tx, currency, nowMs);
    const valueCents =
      currency === null || rate === null ? null : usdValueMinor(BigInt(p.amount), currency.decimals, rate);
    values.push({ requestKey: p.requestKey, valueCents });
  }
  return values;
}

function windowStart(nowMs: number): string {
  return new Date(nowMs - VELOCITY_WINDOW_MS).toISOString();
}

/**
 * The queued payouts (oldest first) the cap lets the planner consider, and the batch's gate; those
 * from the first over the cap on show `awaiting_velocity_cap` (once each) and the operator is told.
 */
export async function capQueuedPayouts<Q extends QueuedPayout>(
  store: Store,
  network: string,
  queued: readonly Q[],
  options: Pick<ChainPayoutOptions, "now" | "log">,
): Promise<{ within: Q[]; gate: CapGate }> {
  const nowMs = options.now().getTime();
  const { cap, spent, values } = await store.transaction(async (tx) => ({
    cap: await findVelocityCap(tx, network),
    spent: await spentSince(tx, network, windowStart(nowMs)),
    values: await valuesOf(tx, queued, nowMs),
  }));
  const gate: CapGate = { network, values: new Map(values.map((v) => [v.requestKey, v.valueCents])), closed: false };
  const count = payoutsWithinCap({ capCents: cap, spentCents: spent, payouts: values });
  const held = queued.slice(count);
  const fresh = held.filter((p) => p.processorStatus !== AWAITING_VELOCITY_CAP);
  if (fresh.length > 0) {
    const at = options.now().toISOString();
    await store.transaction(async (tx) => {
      for (const p of fresh)
        await reportPayoutProgress(tx, p.requestKey, { processorStatus: AWAITING_VELOCITY_CAP }, at);
    });
    options.log.warn(
      { network, waiting: held.length, capCents: String(cap), spentCents: String(spent) },
      "payouts wait for the network's velocity cap",
    );
  }
  return { within: queued.slice(0, count), gate };
}

/**
 * Under the nonce lock, before a payout's transaction is stored: whether it still fits the cap as
 * read now (another process may have signed meanwhile). Fitting, it is counted in the same
 * transaction; held back, so are the payouts behind it in the batch.
 */
export async function claimUnderCap(tx: Tx, gate: CapGate, requestKey: string, at: string): Promise<boolean> {
  if (gate.closed) return false;
  const nowMs = Date.parse(at);
  const value = gate.values.get(requestKey) ?? null;
  const cap = await findVelocityCap(tx, gate.network);
  if (!fitsVelocityCap(cap, await spentSince(tx, gate.network, windowStart(nowMs)), value)) {
    gate.closed = true;
    return false;
  }
  if (value !== null) await recordVelocitySpend(tx, { requestKey, network: gate.network, cents: value, at });
  return true;
}
