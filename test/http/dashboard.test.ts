// Dashboard API (product §14) on both stores: invitations, sessions, CSRF, roles, step-up, TOTP, team, audit, API keys, throttling.
import type { Kysely } from "kysely";
import { beforeAll, describe, expect, it } from "vitest";
import type { Database } from "../../src/store/schema.ts";
import { hashToken } from "../../src/store/secrets.ts";
import {
  client,
  type DashboardClient,
  invitedUser,
  inviteToken,
  PASSWORD,
  sessionCookieOf,
  signIn,
  totpAt,
  totpNow,
} from "../support/dashboard.ts";
import { useTestServer } from "../support/fixture.ts";
import { admin, call, createMerchant, expectProblem, merchant } from "../support/server.ts";

let merchantId: string;
let owner: DashboardClient;
let developer: DashboardClient;
let viewer: DashboardClient;

/** Direct writes (to age a session or an invitation) go through a transaction: on SQLite the store itself is read-only. */
function write(work: (db: Kysely<Database>) => Promise<unknown>): Promise<unknown> {
  return server.ctx.store.transaction((tx) => work(tx.db));
}

const server = useTestServer();
beforeAll(async () => {
  merchantId = (await createMerchant(server)).id;
  owner = await invitedUser(server, merchantId, "owner");
  developer = await invitedUser(server, merchantId, "developer");
  viewer = await invitedUser(server, merchantId, "viewer");
});

describe("operator invitations", () => {
  it("invites, lists and removes users; an invitation is single use", async () => {
    const email = "single-use@example.com";
    const invited = await admin(server, "POST", `/merchants/${merchantId}/users`, { email, role: "viewer" });
    expect(invited.status).toBe(200);
    expect(invited.body.inviteUrl).toMatch(/\/dashboard\/accept#token=/);
    // Inviting a pending email again renews its invitation (the same answer as for a new email,
    // product §18): the newer link counts, the older one no longer does.
    const renewed = await admin(server, "POST", `/merchants/${merchantId}/users`, { email, role: "owner" });
    expect(renewed.status).toBe(200);
    expect(renewed.body.userId).toBe(invited.body.userId);
    expectProblem(
      await call(server.baseUrl, "POST", "/dashboard/v1/invitations/accept", {
        body: { token: inviteToken(invited.body.inviteUrl), password: PASSWORD },
      }),
      404,
      "invitation_invalid",
    );
    const listed = await admin(server, "GET", `/merchants/${merchantId}/users`);
    expect(listed.body.find((u: { email: string }) => u.email === email).status).toBe("invited");
    const token = inviteToken(renewed.body.inviteUrl);
    expectProblem(
      await call(server.baseUrl, "POST", "/dashboard/v1/invitations/accept", { body: { token, password: "short" } }),
      400,
      "password_too_short",
    );
    const accepted = await call(server.baseUrl, "POST", "/dashboard/v1/invitations/accept", {
      body: { token, password: PASSWORD },
    });
    expect(accepted.status).toBe(200);
    expect(accepted.headers.get("set-cookie")).toMatch(/HttpOnly; SameSite=Strict/);
    expectProblem(
      await call(server.baseUrl, "POST", "/dashboard/v1/invitations/accept", { body: { token, password: PASSWORD } }),
      404,
      "invitation_invalid",
    );
    expect((await admin(server, "DELETE", `/merchants/${merchantId}/users/${invited.body.userId}`)).status).toBe(200);
    expectProblem(await signIn(server, email, PASSWORD), 401, "signin_failed");
    expectProblem(
      await admin(server, "POST", "/merchants/nope/users", { email: "x@example.com", role: "owner" }),
      404,
      "merchant_not_found",
    );
    expectProblem(
      await admin(server, "POST", `/merchants/${merchantId}/users`, { email: "y@example.com", role: "admin" }),
      400,
      "validation_failed",
    );
  });

  it("an expired invitation cannot be accepted", async () => {
    const invited = await admin(server, "POST", `/merchants/${merchantId}/users`, {
      email: "late@example.com",
      role: "viewer",
    });
    await write((db) =>
      db
        .updateTable("dashboard_memberships")
        .set({ invite_expires_at: new Date(Date.now() - 1000).toISOString() })
        .where("id", "=", invited.body.userId)
        .execute(),
    );
    expectProblem(
      await call(server.baseUrl, "POST", "/dashboard/v1/invitations/accept", {
        body: { token: inviteToken(invited.body.inviteUrl), password: PASSWORD },
      }),
      404,
      "invitation_invalid",
    );
  });
});

describe("sessions", () => {
  it("answers 401 without a session, and signs in and out", async () => {
    expectProblem(await call(server.baseUrl, "GET", "/dashboard/v1/overview"), 401, "session_required");
    const signedIn = await signIn(server, viewer.email, PASSWORD);
    expect(signedIn.status).toBe(200);
    expect(signedIn.body.user.role).toBe("viewer");
    const session = client(server, viewer.email, viewer.userId, sessionCookieOf(signedIn), signedIn.body.csrfToken);
    expect((await session.call("GET", "/session")).status).toBe(200);
    expect((await session.call("DELETE", "/session")).status).toBe(200);
    expectProblem(await session.call("GET", "/session"), 401, "session_required");
  });

  it("the same answer for an unknown account and a wrong password", async () => {
    const unknown = await signIn(server, "nobody@example.com", PASSWORD);
    const wrong = await signIn(server, owner.email, "wrong password!!");
    expectProblem(unknown, 401, "signin_failed");
    expectProblem(wrong, 401, "signin_failed");
    expect(unknown.body.detail).toBe(wrong.body.detail);
  });

  it("refuses a change without the CSRF token (403)", async () => {
    expectProblem(await owner.call("POST", "/step-up", { password: PASSWORD }, { csrf: null }), 403, "csrf_failed");
    expectProblem(
      await owner.call("POST", "/step-up", { password: PASSWORD }, { csrf: "x".repeat(43) }),
      403,
      "csrf_failed",
    );
  });

  it("an idle session expires (401), as does one past its absolute lifetime", async () => {
    const fresh = await signIn(server, developer.email, PASSWORD);
    const session = client(server, developer.email, developer.userId, sessionCookieOf(fresh), fresh.body.csrfToken);
    const tokenHash = hashToken(sessionCookieOf(fresh).split("=")[1] as string);
    await write((db) =>
      db
        .updateTable("dashboard_sessions")
        .set({ last_seen_at: new Date(Date.now() - 31 * 60_000).toISOString() })
        .where("token_hash", "=", tokenHash)
        .execute(),
    );
    expectProblem(await session.call("GET", "/overview"), 401, "session_required");

    const other = await signIn(server, developer.email, PASSWORD);
    const second = client(server, developer.email, developer.userId, sessionCookieOf(other), other.body.csrfToken);
    await write((db) =>
      db
        .updateTable("dashboard_sessions")
        .set({ created_at: new Date(Date.now() - 12 * 3_600_000 - 1000).toISOString() })
        .where("token_hash", "=", hashToken(sessionCookieOf(other).split("=")[1] as string))
        .execute(),
    );
    expectProblem(await second.call("GET", "/overview"), 401, "session_required");
  });

  it("throttles sign-in per account (429)", async () => {
    const target = await invitedUser(server, (await createMerchant(server)).id, "viewer");
    for (let i = 0; i < 10; i++)
      expectProblem(await signIn(server, target.email, "wrong password!!"), 401, "signin_failed");
    expectProblem(await signIn(server, target.email, PASSWORD), 429, "rate_limited");
  });
});

describe("roles and step-up", () => {
  it("a viewer reads the overview but cannot create or revoke keys nor touch the team", async () => {
    const overview = await viewer.call("GET", "/overview");
    expect(overview.status).toBe(200);
    expect(Array.isArray(overview.body.balances)).toBe(true);
    expect((await viewer.call("GET", "/api-keys")).status).toBe(200);
    expectProblem(await viewer.call("POST", "/api-keys"), 403, "role_forbidden");
    expectProblem(await viewer.call("DELETE", "/api-keys/whatever"), 403, "role_forbidden");
    expectProblem(
      await viewer.call("POST", "/team", { email: "v@example.com", role: "viewer" }),
      403,
      "role_forbidden",
    );
    expectProblem(await viewer.call("GET", "/audit"), 403, "role_forbidden");
  });

  it("a developer manages keys but cannot touch the team or read the audit log", async () => {
    expectProblem(
      await developer.call("POST", "/team", { email: "d@example.com", role: "viewer" }),
      403,
      "role_forbidden",
    );
    expectProblem(await developer.call("PATCH", `/team/${viewer.userId}`, { role: "owner" }), 403, "role_forbidden");
    expectProblem(await developer.call("DELETE", `/team/${viewer.userId}`), 403, "role_forbidden");
    expectProblem(await developer.call("GET", "/audit"), 403, "role_forbidden");
  });

  it("creating a key needs a recent step-up; the key works on the public API until revoked", async () => {
    // Accepting the invitation counted as a step-up; five minutes later it no longer does.
    await write((db) =>
      db
        .updateTable("dashboard_sessions")
        .set({ step_up_at: new Date(Date.now() - 6 * 60_000).toISOString() })
        .where("user_id", "=", developer.userId)
        .execute(),
    );
    expectProblem(await developer.call("POST", "/api-keys"), 403, "step_up_required");
    expectProblem(await developer.call("POST", "/step-up", { password: "wrong password!!" }), 401, "step_up_failed");
    expect((await developer.call("POST", "/step-up", { password: PASSWORD })).status).toBe(200);
    const created = await developer.call("POST", "/api-keys");
    expect(created.status).toBe(200);
    expect(created.body.secretKey).toMatch(/^[0-9a-f]{64}$/);
    const me = await merchant(server, created.body.apiKey, "GET", "/public/v1/me");
    expect(me.status).toBe(200);
    // The last-used time is written off the request's path; wait for it (bounded).
    let listed = await developer.call("GET", "/api-keys");
    const find = () => listed.body.find((k: { prefix: string }) => created.body.apiKey.startsWith(k.prefix));
    for (let i = 0; i < 50 && find().lastUsedAt === null; i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      listed = await developer.call("GET", "/api-keys");
    }
    const item = find();
    expect(item.revokedAt).toBeNull();
    expect(Date.parse(item.lastUsedAt)).toBeGreaterThanOrEqual(Date.parse(item.createdAt));
    expect(JSON.stringify(listed.body)).not.toContain(created.body.secretKey);
    expect(JSON.stringify(listed.body)).not.toContain(created.body.apiKey);
    expect((await developer.call("DELETE", `/api-keys/${item.id}`)).status).toBe(200);
    expectProblem(await developer.call("DELETE", `/api-keys/${item.id}`), 404, "api_key_not_found");
    expect((await merchant(server, created.body.apiKey, "GET", "/public/v1/me")).status).toBe(401);
  });

  it("another merchant's objects are 404", async () => {
    const other = await createMerchant(server);
    const outsider = await invitedUser(server, other.id, "owner");
    const keys = await owner.call("GET", "/api-keys");
    const ownKey = keys.body[0];
    expectProblem(await outsider.call("DELETE", `/api-keys/${ownKey.id}`), 404, "api_key_not_found");
    expectProblem(await outsider.call("PATCH", `/team/${viewer.userId}`, { role: "owner" }), 404, "user_not_found");
    expectProblem(await outsider.call("DELETE", `/team/${viewer.userId}`), 404, "user_not_found");
    const team = await outsider.call("GET", "/team");
    expect(team.body.map((u: { id: string }) => u.id)).toEqual([outsider.userId]);
  });
});

describe("team and audit", () => {
  it("an owner invites, changes roles and removes; the last owner stays", async () => {
    const invited = await owner.call("POST", "/team", { email: "teammate@example.com", role: "viewer" });
    expect(invited.status).toBe(200);
    const changed = await owner.call("PATCH", `/team/${invited.body.userId}`, { role: "developer" });
    expect(changed.body.role).toBe("developer");
    expect((await owner.call("DELETE", `/team/${invited.body.userId}`)).status).toBe(200);
    expectProblem(await owner.call("DELETE", `/team/${owner.userId}`), 409, "last_owner");
    expectProblem(await owner.call("PATCH", `/team/${owner.userId}`, { role: "viewer" }), 409, "last_owner");
  });

  it("every action is in the audit log, newest first, paged", async () => {
    const first = await owner.call("GET", "/audit?limit=2");
    expect(first.status).toBe(200);
    expect(first.body.items).toHaveLength(2);
    expect(first.body.items[0].action).toBe("team.remove");
    expect(first.body.items[0].address).toBe("127.0.0.1");
    expect(first.body.items[0].userEmail).toBe(owner.email);
    const next = await owner.call("GET", `/audit?limit=2&before=${first.body.nextBefore}`);
    expect(next.body.items[0].id < first.body.items[1].id).toBe(true);
    expectProblem(await owner.call("GET", "/audit?limit=1000"), 400, "validation_failed");
  });
});

describe("account", () => {
  it("enrols TOTP, then asks for it at sign-in; recovery codes work once; TOTP can be disabled", async () => {
    const user = await invitedUser(server, merchantId, "developer");
    const setup = await user.call("POST", "/account/totp/setup");
    expect(setup.status).toBe(200);
    expect(setup.body.qrCodeSvg).toContain("<svg");
    expect(setup.body.otpauthUrl).toContain("otpauth://totp/");
    expectProblem(
      await user.call("POST", "/account/totp/enable", {
        code: "000000" === totpNow(setup.body.secret) ? "111111" : "000000",
      }),
      400,
      "totp_invalid",
    );
    const enabled = await user.call("POST", "/account/totp/enable", { code: totpNow(setup.body.secret) });
    expect(enabled.body.recoveryCodes).toHaveLength(10);
    const stored = await server.ctx.store.db
      .selectFrom("dashboard_users")
      .select("totp_secret_encrypted")
      .where("id", "=", user.userId)
      .executeTakeFirstOrThrow();
    expect(stored.totp_secret_encrypted).not.toContain(setup.body.secret);

    expectProblem(await signIn(server, user.email, PASSWORD), 401, "totp_required");
    // The enrolment spent the current step: the next step's code signs in.
    expect((await signIn(server, user.email, PASSWORD, totpAt(setup.body.secret, 1))).status).toBe(200);
    const recovery = enabled.body.recoveryCodes[0];
    expect((await signIn(server, user.email, PASSWORD, recovery)).status).toBe(200);
    expectProblem(await signIn(server, user.email, PASSWORD, recovery), 401, "signin_failed");

    // Turning TOTP off takes a code: the password alone is not accepted.
    expectProblem(await user.call("POST", "/account/totp/disable", { password: PASSWORD }), 400, "validation_failed");
    expectProblem(await user.call("POST", "/account/totp/disable", { code: "not-a-code" }), 401, "step_up_failed");
    expect((await user.call("POST", "/account/totp/disable", { code: enabled.body.recoveryCodes[1] })).status).toBe(
      200,
    );
    expect((await signIn(server, user.email, PASSWORD)).status).toBe(200);
  });

  it("changes the password, ending the user's other sessions", async () => {
    const user = await invitedUser(server, merchantId, "viewer");
    const other = await signIn(server, user.email, PASSWORD);
    const otherSession = client(server, user.email, user.userId, sessionCookieOf(other), other.body.csrfToken);
    expectProblem(
      await user.call("POST", "/account/password", { currentPassword: PASSWORD, newPassword: "short" }),
      400,
      "password_too_short",
    );
    const newPassword = "another long passphrase";
    expect((await user.call("POST", "/account/password", { currentPassword: PASSWORD, newPassword })).status).toBe(200);
    expectProblem(await otherSession.call("GET", "/session"), 401, "session_required");
    expect((await user.call("GET", "/session")).status).toBe(200);
    expect((await signIn(server, user.email, newPassword)).status).toBe(200);
  });
});

describe("OpenAPI", () => {
  it("documents /dashboard/v1 under its own tag", async () => {
    const doc = await call(server.baseUrl, "GET", "/openapi.json");
    const paths = Object.entries(doc.body.paths as Record<string, Record<string, { tags?: string[] }>>).filter(([p]) =>
      p.startsWith("/dashboard/v1/"),
    );
    expect(paths.length).toBeGreaterThan(8);
    for (const [, ops] of paths) for (const op of Object.values(ops)) expect(op.tags).toEqual(["dashboard"]);
  });
});

describe("throttling per address", () => {
  it("answers 429 to every account once an address has failed too often, and lets it in again when the window moves on", async () => {
    const fresh = await invitedUser(server, merchantId, "viewer");
    const windowStart = new Date(Date.now() - 60_000).toISOString();
    // 50 failures from this address in the window, for other accounts (faster than 50 argon2 checks).
    await write((db) =>
      db
        .insertInto("throttle_counters")
        .values({ subject: "signin:address:127.0.0.1", window_started_at: windowStart, attempts: 50 })
        .onConflict((oc) => oc.column("subject").doUpdateSet({ window_started_at: windowStart, attempts: 50 }))
        .execute(),
    );
    expectProblem(await signIn(server, fresh.email, PASSWORD), 429, "rate_limited");
    await write((db) =>
      db
        .updateTable("throttle_counters")
        .set({ window_started_at: new Date(Date.now() - 16 * 60_000).toISOString() })
        .where("subject", "=", "signin:address:127.0.0.1")
        .execute(),
    );
    expect((await signIn(server, fresh.email, PASSWORD)).status).toBe(200);
  });
});
