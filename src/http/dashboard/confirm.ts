// Credential checks of the dashboard under throttles counted before they are evaluated (product §18): sign-in, step-up, TOTP and recovery codes.
import type { FastifyReply, FastifyRequest } from "fastify";
import type { ServiceContext } from "../../app/context.ts";
import {
  SIGNIN_FAILURES_ALLOWED,
  SIGNIN_FAILURES_PER_ADDRESS,
  SIGNIN_WINDOW_MS,
  STEP_UP_FAILURES_ALLOWED,
  STEP_UP_FAILURES_PER_ADDRESS,
  STEP_UP_WINDOW_MS,
} from "../../domain/dashboardRoles.ts";
import {
  acceptTotpStep,
  audit,
  type DashboardUser,
  deleteSession,
  spendRecoveryCode,
  totpSecretContext,
} from "../../store/dashboard.ts";
import { nowIso, type Tx } from "../../store/store.ts";
import { clientAddress } from "../addressLimits.ts";
import { Problem } from "../problem.ts";
import { type Reservation, release, reserve, setRetryAfter, type ThrottleRule } from "../throttles.ts";
import { recoveryCodeHash, totpStep } from "./credentials.ts";
import { clearSessionCookie, signedIn } from "./session.ts";

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

/** Writes one audit entry about `user` (who may not be signed in: a failed sign-in). */
export function auditUser(
  tx: Tx,
  request: FastifyRequest,
  user: DashboardUser,
  action: string,
  target: string | null,
): Promise<void> {
  return audit(
    tx,
    {
      merchantId: user.merchantId,
      userId: user.id,
      userEmail: user.email,
      action,
      target,
      // The client's own address (request.ip honours TRUST_PROXY), not the /64 the limits count.
      address: request.ip,
    },
    nowIso(),
  );
}

/**
 * A TOTP code, each time step once per user (RFC 6238 §5.2), or an unused recovery code (spent
 * here, and audited). Null when the code is wrong, already used, or TOTP is off.
 */
export async function secondFactor(
  ctx: ServiceContext,
  request: FastifyRequest,
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
    await auditUser(tx, request, user, "account.use_recovery_code", `${left} left`);
    return "recovery";
  });
}

export const tooManySignins = () =>
  new Problem("rate_limited", "Too many failed sign-ins; retry after the time in Retry-After.");

/**
 * Reserves a sign-in attempt before anything is checked: over either limit the answer is 429, the
 * right password included, until the window ends.
 */
export async function reserveSignin(
  ctx: ServiceContext,
  request: FastifyRequest,
  reply: FastifyReply,
  email: string,
): Promise<Reservation> {
  const reservation = await reserve(ctx.store, signinRules(email, clientAddress(request)));
  if (!reservation.ok) {
    setRetryAfter(reply, reservation.retryAfterSeconds);
    throw tooManySignins();
  }
  return reservation;
}

/**
 * Runs `check` (a password or a code of the signed-in user) under the step-up throttle. The attempt
 * is reserved first; over the limit the answer is 429 and this session ends. A failure is audited
 * and answered with `failure`; on success the reservation is given back in the transaction that
 * runs `onSuccess`.
 */
export async function confirmed<T>(
  ctx: ServiceContext,
  request: FastifyRequest,
  reply: FastifyReply,
  what: string,
  check: () => Promise<boolean>,
  failure: () => Problem,
  onSuccess: (tx: Tx) => Promise<T>,
): Promise<T> {
  const { user, session } = signedIn(request);
  const reservation = await reserve(ctx.store, stepUpRules(user.id, clientAddress(request)));
  if (!reservation.ok) {
    await ctx.store.transaction(async (tx) => {
      await deleteSession(tx, session.tokenHash);
      await auditUser(tx, request, user, "session.ended_throttled", what);
    });
    clearSessionCookie(ctx, reply);
    setRetryAfter(reply, reservation.retryAfterSeconds);
    throw new Problem(
      "rate_limited",
      "Too many failed confirmations; this session has ended. Sign in again after the time in Retry-After.",
    );
  }
  if (!(await check())) {
    await ctx.store.transaction((tx) => auditUser(tx, request, user, "session.step_up_failed", what));
    throw failure();
  }
  return ctx.store.transaction(async (tx) => {
    await release(tx, reservation);
    return onSuccess(tx);
  });
}
