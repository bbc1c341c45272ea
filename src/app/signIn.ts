// The dashboard's sign-in and step-up rules (product §18): the throttles counted before a credential is checked, the second factor, and the audit of each attempt.

import {
  PASSWORD_MIN_LENGTH,
  SIGNIN_FAILURES_ALLOWED,
  SIGNIN_FAILURES_PER_ADDRESS,
  SIGNIN_WINDOW_MS,
  STEP_UP_FAILURES_ALLOWED,
  STEP_UP_FAILURES_PER_ADDRESS,
  STEP_UP_WINDOW_MS,
} from "../domain/dashboardRoles.ts";
import { checkPassword, type PasswordRefusal } from "../domain/passwordRules.ts";
import {
  acceptTotpStep,
  audit,
  type DashboardUser,
  deleteSession,
  spendRecoveryCode,
  totpSecretContext,
} from "../store/dashboard.ts";
import { nowIso, type Tx } from "../store/store.ts";
import type { ServiceContext } from "./context.ts";
import { recoveryCodeHash, totpStep } from "./credentials.ts";
import type { Refusal } from "./refusal.ts";
import { type Reservation, release, reserve, type ThrottleRule } from "./throttles.ts";

/** Sign-in attempts: per account (the email as typed, lowercased) and per client address. */
export function signinRules(email: string, address: string): ThrottleRule[] {
  return [
    { subject: `signin:account:${email}`, limit: SIGNIN_FAILURES_ALLOWED, windowMs: SIGNIN_WINDOW_MS },
    { subject: `signin:address:${address}`, limit: SIGNIN_FAILURES_PER_ADDRESS, windowMs: SIGNIN_WINDOW_MS },
  ];
}

/** Confirmations of a signed-in user: per user (across sessions) and per client address. */
export function stepUpRules(userId: string, address: string): ThrottleRule[] {
  return [
    { subject: `step_up:user:${userId}`, limit: STEP_UP_FAILURES_ALLOWED, windowMs: STEP_UP_WINDOW_MS },
    { subject: `step_up:address:${address}`, limit: STEP_UP_FAILURES_PER_ADDRESS, windowMs: STEP_UP_WINDOW_MS },
  ];
}

/**
 * Writes one audit entry about `user` (who may not be signed in: a failed sign-in). `address` is
 * the client's own address, not the /64 the limits count.
 */
export function auditUser(
  tx: Tx,
  address: string,
  user: DashboardUser,
  action: string,
  target: string | null,
): Promise<void> {
  return audit(
    tx,
    { merchantId: user.merchantId, userId: user.id, userEmail: user.email, action, target, address },
    nowIso(),
  );
}

/**
 * A TOTP code, each time step once per user (RFC 6238 §5.2), or an unused recovery code (spent
 * here, and audited). Null when the code is wrong, already used, or TOTP is off.
 */
export async function secondFactor(
  ctx: ServiceContext,
  address: string,
  user: DashboardUser,
  code: string,
): Promise<"totp" | "recovery" | null> {
  if (!user.totpEnabled || user.totpSecretEncrypted === null) return null;
  const secret = ctx.box.open(user.totpSecretEncrypted, totpSecretContext(user.id));
  const step = totpStep(secret, code.trim());
  if (step !== null) {
    return (await ctx.store.transaction((tx) => acceptTotpStep(tx, user.id, step))) ? "totp" : null;
  }
  const hash = recoveryCodeHash(code);
  if (!user.recoveryHashes.includes(hash)) return null;
  return ctx.store.transaction(async (tx) => {
    const left = await spendRecoveryCode(tx, user.id, hash);
    if (left === null) return null;
    await auditUser(tx, address, user, "account.use_recovery_code", `${left} left`);
    return "recovery";
  });
}

/** Reserves a sign-in attempt before anything is checked: over either limit it is refused, the right password included, until the window ends. */
export function reserveSignin(ctx: ServiceContext, email: string, limitAddress: string): Promise<Reservation> {
  return reserve(ctx.store, signinRules(email, limitAddress));
}

/** Who confirms, from where, and what: a signed-in user's step-up. */
export interface StepUp {
  user: DashboardUser;
  sessionTokenHash: string;
  /** The client's own address (audited). */
  address: string;
  /** The address the limits count (an IPv6 client's /64). */
  limitAddress: string;
  what: string;
}

export type StepUpOutcome<T> =
  | { ok: true; value: T }
  /** Over the limit: the session has ended (deleted and audited). */
  | { ok: false; error: "throttled"; retryAfterSeconds: number }
  /** The check failed (audited). */
  | { ok: false; error: "failed" };

/**
 * Runs `check` (a password or a code of the signed-in user) under the step-up throttle. The attempt
 * is reserved first; over the limit the session ends. A failure is audited; on success the
 * reservation is given back in the transaction that runs `onSuccess`.
 */
export async function confirmStepUp<T>(
  ctx: ServiceContext,
  stepUp: StepUp,
  check: () => Promise<boolean>,
  onSuccess: (tx: Tx) => Promise<T>,
): Promise<StepUpOutcome<T>> {
  const { user, address, what } = stepUp;
  const reservation = await reserve(ctx.store, stepUpRules(user.id, stepUp.limitAddress));
  if (!reservation.ok) {
    await ctx.store.transaction(async (tx) => {
      await deleteSession(tx, stepUp.sessionTokenHash);
      await auditUser(tx, address, user, "session.ended_throttled", what);
    });
    return { ok: false, error: "throttled", retryAfterSeconds: reservation.retryAfterSeconds };
  }
  if (!(await check())) {
    await ctx.store.transaction((tx) => auditUser(tx, address, user, "session.step_up_failed", what));
    return { ok: false, error: "failed" };
  }
  const value = await ctx.store.transaction(async (tx) => {
    await release(tx, reservation);
    return onSuccess(tx);
  });
  return { ok: true, value };
}

const PASSWORD_REFUSALS: Record<PasswordRefusal, string> = {
  password_too_short: `A password has at least ${PASSWORD_MIN_LENGTH} characters.`,
  password_blank: "A password is not only whitespace.",
  password_too_common:
    "This password is too common or too easy to guess; choose another (a few unrelated words work well).",
};

/** The refusal of a new password by the rules (product §18), with the rule's code (400); null: it passes. */
export async function passwordRefusal(password: string, pointer: string): Promise<Refusal<PasswordRefusal> | null> {
  const checked = await checkPassword(password);
  return checked.ok ? null : { code: checked.error, detail: PASSWORD_REFUSALS[checked.error], pointer };
}
