// Sign-in and step-up on the wire: the use case's rules (src/app/signIn.ts) with the request's addresses, answered as 429 with Retry-After or the route's own failure.
import type { FastifyReply, FastifyRequest } from "fastify";
import type { ServiceContext } from "../../app/context.ts";
import * as rules from "../../app/signIn.ts";
import type { Reservation } from "../../app/throttles.ts";
import type { DashboardUser } from "../../store/dashboard.ts";
import type { Tx } from "../../store/store.ts";
import { clientAddress } from "../addressLimits.ts";
import { Problem } from "../problem.ts";
import { setRetryAfter } from "../throttles.ts";
import { clearSessionCookie, signedIn } from "./session.ts";

/** Writes one audit entry about `user`, from the client's own address (request.ip honours TRUST_PROXY). */
export function auditUser(
  tx: Tx,
  request: FastifyRequest,
  user: DashboardUser,
  action: string,
  target: string | null,
): Promise<void> {
  return rules.auditUser(tx, request.ip, user, action, target);
}

/** The second factor of the use case, a recovery code audited from the client's own address. */
export function secondFactor(
  ctx: ServiceContext,
  request: FastifyRequest,
  user: DashboardUser,
  code: string,
): Promise<"totp" | "recovery" | null> {
  return rules.secondFactor(ctx, request.ip, user, code);
}

export const tooManySignins = () =>
  new Problem("rate_limited", "Too many failed sign-ins; retry after the time in Retry-After.");

/** Reserves a sign-in attempt before anything is checked: over either limit the answer is 429, the right password included. */
export async function reserveSignin(
  ctx: ServiceContext,
  request: FastifyRequest,
  reply: FastifyReply,
  email: string,
): Promise<Reservation> {
  const reservation = await rules.reserveSignin(ctx, email, clientAddress(request));
  if (!reservation.ok) {
    setRetryAfter(reply, reservation.retryAfterSeconds);
    throw tooManySignins();
  }
  return reservation;
}

/**
 * A step-up of the signed-in user (confirmStepUp): over the limit the answer is 429 and the session
 * cookie is cleared; a failed check is answered with `failure`.
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
  const stepUp = {
    user,
    sessionTokenHash: session.tokenHash,
    address: request.ip,
    limitAddress: clientAddress(request),
    what,
  };
  const outcome = await rules.confirmStepUp(ctx, stepUp, check, onSuccess);
  if (outcome.ok) return outcome.value;
  if (outcome.error === "failed") throw failure();
  clearSessionCookie(ctx, reply);
  setRetryAfter(reply, outcome.retryAfterSeconds);
  throw new Problem(
    "rate_limited",
    "Too many failed confirmations; this session has ended. Sign in again after the time in Retry-After.",
  );
}
