// The operator's velocity cap of a network's hot wallet (product §31): the USD the hot wallet may pay out per rolling 24 hours, and which queued payouts, in their order, fit in what is left.
import { parseAmount } from "./money.ts";
import { USD_DECIMALS } from "./rates.ts";
import { err, ok, type Result } from "./result.ts";

/** The rolling window the cap counts payouts over. */
export const VELOCITY_WINDOW_MS = 24 * 60 * 60 * 1000;

/** A queued payout's processor status while the cap holds it back (payouts leave in order: those behind it wait too). */
export const AWAITING_VELOCITY_CAP = "awaiting_velocity_cap";

/** A queued payout as the cap sees it: its USD value in cents now (null: no live rate, so it cannot be valued). */
export interface CappedPayout {
  readonly requestKey: string;
  readonly valueCents: bigint | null;
}

/** Whether one more payout of `valueCents` fits: the cap counts what was sent in the window plus it. */
export function fitsVelocityCap(capCents: bigint | null, spentCents: bigint, valueCents: bigint | null): boolean {
  if (capCents === null) return true;
  return valueCents !== null && spentCents + valueCents <= capCents;
}

/**
 * How many of the queued payouts, oldest first, go out under the cap: they stop at the first that
 * does not fit (or has no value), as payouts leave in the order they were accepted; a later, smaller
 * one does not overtake it.
 */
export function payoutsWithinCap(input: {
  capCents: bigint | null;
  spentCents: bigint;
  payouts: readonly CappedPayout[];
}): number {
  let spent = input.spentCents;
  for (const [index, payout] of input.payouts.entries()) {
    if (!fitsVelocityCap(input.capCents, spent, payout.valueCents)) return index;
    spent += payout.valueCents ?? 0n;
  }
  return input.payouts.length;
}

/** Reads the operator's cap: a positive USD amount with at most cents ("25000", "25000.50"). */
export function parseVelocityCap(input: string): Result<bigint, "invalid_velocity_cap"> {
  const cents = parseAmount(input, USD_DECIMALS);
  return cents.ok ? ok(cents.value) : err("invalid_velocity_cap");
}
