// Pre-authorized renewals (product §29): each future period's ReceiveWithAuthorization window, its nonce, its value in the token's units, the checks of a posted one, and the stored renewal's states as a table.
import { keccak_256 } from "@noble/hashes/sha3.js";
import { inUnitsOf } from "./currencies.ts";
import { err, ok, type Result } from "./result.ts";
import { transition } from "./stateTable.ts";
import { addIntervals, daysMs, graceEndMs, type PlanInterval, periodStartMs } from "./subscriptions.ts";

/** A payer pre-authorizes at most this many periods at once (the page offers 1 to 12). */
export const MAX_RENEWAL_PERIODS = 12;
/**
 * A renewal's window opens this long before its invoice is due: the invoice is made at or after
 * that time, and a node's clock a little behind the service's still finds the window open.
 */
export const RENEWAL_SLACK_MS = 10 * 60_000;
/** A period whose window would be shorter than this (no notice and no grace) is not offered. */
export const MIN_RENEWAL_WINDOW_MS = 60 * 60_000;

/** What a period's renewal depends on of the plan it is billed under. */
export interface PeriodTerms {
  planId: string;
  interval: PlanInterval;
  intervalCount: number;
  graceDays: number;
  renewalNoticeDays: number;
  /** The plan's amount in minor units of its currency. */
  amountMinor: bigint;
}

/** A subscription's schedule as far as future periods go: its current period and the plan of each later one. */
export interface RenewalSchedule {
  period: number;
  periodStartMs: number;
  /** Period k (k ≥ anchor.period, under the current plan) starts at anchor plus (k − anchor.period) intervals. */
  anchor: { atMs: number; period: number };
  current: PeriodTerms;
  /** A plan change from `fromPeriod` on (always a later period). */
  next: { terms: PeriodTerms; fromPeriod: number } | null;
}

/** The plan period `k` is billed under. */
export function termsOfPeriod(s: RenewalSchedule, k: number): PeriodTerms {
  return s.next !== null && k >= s.next.fromPeriod ? s.next.terms : s.current;
}

/** When period `k` (the current one or a later one) starts, as the schedule will start it. */
export function startOfPeriod(s: RenewalSchedule, k: number): number {
  if (k <= s.period) return s.periodStartMs;
  if (s.next !== null && k > s.next.fromPeriod) {
    const { terms, fromPeriod } = s.next;
    return addIntervals(startOfPeriod(s, fromPeriod), terms.interval, terms.intervalCount * (k - fromPeriod));
  }
  return periodStartMs(s.anchor, s.current, k);
}

/** When the invoice of period `k` (a later one) falls due: its notice before the period starts, never before the period ahead of it. */
export function invoiceDueMs(s: RenewalSchedule, k: number): number {
  const notice = termsOfPeriod(s, k).renewalNoticeDays;
  return Math.max(startOfPeriod(s, k - 1), startOfPeriod(s, k) - daysMs(notice));
}

/** A renewal's window in Unix seconds: valid after `validAfter`, before `validBefore` (EIP-3009's bounds, both exclusive). */
export interface RenewalWindow {
  validAfter: bigint;
  validBefore: bigint;
}

/**
 * Period `k`'s window: it opens a little before its invoice is due (the service submits it when
 * the invoice is made) and closes when the period's grace ends (when the invoice stops taking
 * payments). Null when that is too short to be worth a signature.
 */
export function renewalWindow(s: RenewalSchedule, k: number): RenewalWindow | null {
  const afterMs = invoiceDueMs(s, k) - RENEWAL_SLACK_MS;
  const beforeMs = graceEndMs(startOfPeriod(s, k), termsOfPeriod(s, k).graceDays);
  if (beforeMs - afterMs < MIN_RENEWAL_WINDOW_MS) return null;
  return { validAfter: BigInt(Math.floor(afterMs / 1000)), validBefore: BigInt(Math.floor(beforeMs / 1000)) };
}

function hexOf(bytes: Uint8Array): string {
  return `0x${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/**
 * The EIP-3009 nonce of a payer's renewal of period `k`: derived, not random, so that signing the
 * same period again gives the same authorization (a repeat stores nothing new), and so that the
 * payer can name it to `cancelAuthorization` without asking the service.
 */
export function renewalNonce(subscriptionId: string, k: number, from: string): string {
  return hexOf(keccak_256(new TextEncoder().encode(`renewal:${subscriptionId}:${k}:${from.toLowerCase()}`)));
}

/**
 * An amount of the invoice's currency (`decimals`, its first entry's) in a token entry's units, as
 * the payer's page asks it: an entry with fewer decimals rounds up (the payer pays enough).
 */
export function inTokenUnits(amountMinor: bigint, decimals: number, tokenDecimals: number): bigint {
  const up = tokenDecimals >= decimals ? 0n : 10n ** BigInt(decimals - tokenDecimals) - 1n;
  return inUnitsOf(amountMinor + up, decimals, tokenDecimals);
}

/** What the service would have the payer sign for one period (besides the domain and `to`). */
export interface RenewalTerms extends RenewalWindow {
  period: number;
  nonce: string;
  value: bigint;
}

/** Why a posted renewal is refused before its signature is looked at; each a stable problem code. */
export type RenewalTermsRefusal = "authorization_nonce_invalid" | "authorization_value" | "authorization_window";

/** A posted renewal's fields against the terms the service gives for its period: each must be exactly those. */
export function checkRenewalTerms(
  expected: RenewalTerms,
  posted: Omit<RenewalTerms, "period">,
): Result<true, RenewalTermsRefusal> {
  if (posted.nonce.toLowerCase() !== expected.nonce.toLowerCase())
    return err("authorization_nonce_invalid", `period ${expected.period}'s nonce is ${expected.nonce}`);
  if (posted.value !== expected.value)
    return err("authorization_value", `period ${expected.period} is ${expected.value} units, not ${posted.value}`);
  if (posted.validAfter !== expected.validAfter || posted.validBefore !== expected.validBefore) {
    return err(
      "authorization_window",
      `period ${expected.period}'s window is after ${expected.validAfter} and before ${expected.validBefore}`,
    );
  }
  return ok(true);
}

/** A stored renewal's life: signed by the payer, then handed to the hot wallet with its invoice, or never sent. */
export const RENEWAL_STATES = ["signed", "submitted", "superseded", "revoked"] as const;
export type RenewalState = (typeof RENEWAL_STATES)[number];

export interface RenewalTransition {
  readonly from: RenewalState;
  readonly to: RenewalState;
  readonly why: string;
}

/** Every allowed move of a stored renewal, and why; the store asserts each write against it. */
export const RENEWAL_TRANSITIONS: readonly RenewalTransition[] = [
  {
    from: "signed",
    to: "submitted",
    why: "its period's invoice was made: it became that invoice's wallet authorization, which the hot wallet submits",
  },
  {
    from: "signed",
    to: "superseded",
    why: "its period's invoice asks another amount (the plan changed): it is never sent, the invoice waits for a payment",
  },
  { from: "signed", to: "revoked", why: "the merchant cancelled the subscription before its period's invoice" },
  {
    from: "submitted",
    to: "revoked",
    why: "the merchant cancelled and closed its period's invoice before the hot wallet sent it",
  },
];

export function mayMoveRenewal(from: RenewalState, to: RenewalState): boolean {
  return transition(RENEWAL_TRANSITIONS, from, to) !== null;
}
