// Dashboard test helpers: invite through the operator API, accept, and call /dashboard/v1 with the session cookie and CSRF token.
import { randomBytes } from "node:crypto";
import { Secret, TOTP } from "otpauth";
import { type Answer, admin, call, type TestServer } from "./server.ts";

export const PASSWORD = "correct horse battery";

export interface DashboardClient {
  email: string;
  userId: string;
  cookie: string;
  csrf: string;
  call<T = any>(method: string, path: string, body?: unknown, extra?: { csrf?: string | null }): Promise<Answer<T>>;
}

export function sessionCookieOf(answer: Answer): string {
  const header = answer.headers.get("set-cookie") ?? "";
  const match = /dashboard_session=([^;]*)/.exec(header);
  if (!match) throw new Error(`no session cookie in ${answer.status} ${answer.text}`);
  return `dashboard_session=${match[1]}`;
}

export function client(
  server: TestServer,
  email: string,
  userId: string,
  cookie: string,
  csrf: string,
): DashboardClient {
  return {
    email,
    userId,
    cookie,
    csrf,
    call(method, path, body, extra = {}) {
      const headers: Record<string, string> = { cookie };
      const token = extra.csrf === undefined ? csrf : extra.csrf;
      if (token !== null) headers["x-csrf-token"] = token;
      return call(server.baseUrl, method, `/dashboard/v1${path}`, { headers, body });
    },
  };
}

export function inviteToken(inviteUrl: string): string {
  const token = new URL(inviteUrl).hash.replace(/^#token=/, "");
  if (!token) throw new Error(`no token in ${inviteUrl}`);
  return token;
}

/** Invites a user through the operator API and accepts the invitation: a signed-in client. */
export async function invitedUser(
  server: TestServer,
  merchantId: string,
  role: "owner" | "developer" | "viewer" | "approver",
): Promise<DashboardClient> {
  const email = `u-${randomBytes(5).toString("hex")}@example.com`;
  const invited = await admin(server, "POST", `/merchants/${merchantId}/users`, { email, role });
  if (invited.status !== 200) throw new Error(`invite: ${invited.status} ${invited.text}`);
  const accepted = await call(server.baseUrl, "POST", "/dashboard/v1/invitations/accept", {
    body: { token: inviteToken(invited.body.inviteUrl), password: PASSWORD },
  });
  if (accepted.status !== 200) throw new Error(`accept: ${accepted.status} ${accepted.text}`);
  return client(server, email, invited.body.userId, sessionCookieOf(accepted), accepted.body.csrfToken);
}

export async function signIn(server: TestServer, email: string, password: string, code?: string): Promise<Answer<any>> {
  return call(server.baseUrl, "POST", "/dashboard/v1/session", {
    body: { email, password, ...(code ? { code } : {}) },
  });
}

export function totpNow(secret: string): string {
  return totpAt(secret, 0);
}

/**
 * The code of the time step `steps` away from now. Each step is accepted once per user (RFC 6238
 * §5.2), and the service accepts the next step too (clock drift): a second code within 30 s is this
 * with 1.
 */
export function totpAt(secret: string, steps: number): string {
  const totp = new TOTP({ algorithm: "SHA1", digits: 6, period: 30, secret: Secret.fromBase32(secret) });
  return totp.generate({ timestamp: Date.now() + steps * 30_000 });
}
