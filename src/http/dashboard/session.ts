// Dashboard sessions on the wire: the cookie, the session hook (idle and absolute timeouts, CSRF) and role and step-up checks.
import { timingSafeEqual } from "node:crypto";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { ServiceContext } from "../../app/context.ts";
import {
  allows,
  type DashboardAction,
  SESSION_ABSOLUTE_MS,
  sessionLive,
  steppedUp,
} from "../../domain/dashboardRoles.ts";
import { assert } from "../../domain/result.ts";
import {
  type DashboardSession,
  type DashboardUser,
  deleteSession,
  findActiveMember,
  findSession,
  touchSession,
} from "../../store/dashboard.ts";
import { nowIso, type Tx } from "../../store/store.ts";
import { Problem } from "../problem.ts";

export const SESSION_COOKIE = "dashboard_session";
export const COOKIE_PATH = "/dashboard";

declare module "fastify" {
  interface FastifyRequest {
    dashboard?: { session: DashboardSession; user: DashboardUser };
  }
}

export function sessionCookie(ctx: ServiceContext, token: string, maxAgeSeconds: number): string {
  const secure = ctx.config.publicBaseUrl.startsWith("https:") ? "; Secure" : "";
  return `${SESSION_COOKIE}=${token}; Path=${COOKIE_PATH}; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure}`;
}

export function setSessionCookie(ctx: ServiceContext, reply: FastifyReply, token: string): void {
  reply.header("set-cookie", sessionCookie(ctx, token, SESSION_ABSOLUTE_MS / 1000));
}

export function clearSessionCookie(ctx: ServiceContext, reply: FastifyReply): void {
  reply.header("set-cookie", sessionCookie(ctx, "", 0));
}

export function cookieToken(request: FastifyRequest): string | undefined {
  const header = request.headers.cookie;
  if (typeof header !== "string") return undefined;
  for (const part of header.split(";")) {
    const [name, ...rest] = part.trim().split("=");
    if (name === SESSION_COOKIE) {
      const value = rest.join("=");
      return /^[\w-]{20,100}$/.test(value) ? value : undefined;
    }
  }
  return undefined;
}

function equalText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/** The hook of every route that needs a session: 401 without a live one, 403 without the CSRF token on a change. */
export function requireSession(ctx: ServiceContext) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const token = cookieToken(request);
    const missing = () => new Problem("session_required", "Sign in to the dashboard first.");
    if (token === undefined) throw missing();
    const session = await findSession(ctx.store, token);
    if (!session) throw missing();
    const now = Date.now();
    if (!sessionLive(Date.parse(session.createdAt), Date.parse(session.lastSeenAt), now)) {
      await ctx.store.transaction((tx) => deleteSession(tx, session.tokenHash));
      clearSessionCookie(ctx, reply);
      throw new Problem("session_required", "The session has expired; sign in again.");
    }
    if (!SAFE_METHODS.has(request.method)) {
      const presented = request.headers["x-csrf-token"];
      if (typeof presented !== "string" || !equalText(presented, session.csrfToken)) {
        throw new Problem("csrf_failed", "Send the session's CSRF token in the x-csrf-token header.");
      }
    }
    // The login in the session's merchant: a membership removed meanwhile ends the session.
    const user =
      session.merchantId === null ? null : await findActiveMember(ctx.store, session.userId, session.merchantId);
    if (!user || user.passwordHash === null) throw missing();
    await ctx.store.transaction((tx) => touchSession(tx, session.tokenHash, nowIso()));
    request.dashboard = { session, user };
  };
}

/** What the dashboard's index hands its route modules: the session hook and the audit writer. */
export interface DashboardScope {
  session: (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
  record: (request: FastifyRequest, tx: Tx, action: string, target: string | null) => Promise<unknown>;
}

export function signedIn(request: FastifyRequest): { session: DashboardSession; user: DashboardUser } {
  assert(request.dashboard, "route is behind requireSession");
  return request.dashboard;
}

export function requireRole(
  request: FastifyRequest,
  action: DashboardAction,
): { session: DashboardSession; user: DashboardUser } {
  const current = signedIn(request);
  if (!allows(current.user.role, action)) {
    throw new Problem("role_forbidden", `The ${current.user.role} role does not allow this action.`);
  }
  return current;
}

export function requireStepUp(request: FastifyRequest): void {
  const { session } = signedIn(request);
  const at = session.stepUpAt === null ? null : Date.parse(session.stepUpAt);
  if (!steppedUp(at, Date.now())) {
    throw new Problem(
      "step_up_required",
      "Confirm with your password or a TOTP code first (POST /dashboard/v1/step-up).",
    );
  }
}
