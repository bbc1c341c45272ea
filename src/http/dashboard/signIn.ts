// Dashboard sign-in: open a session (password, then TOTP or a recovery code), read it, switch merchant, sign out.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { verifyPassword } from "../../app/credentials.ts";
import { release } from "../../app/throttles.ts";
import {
  audit,
  createSession,
  deleteSession,
  findActiveMember,
  findMember,
  findUserByEmail,
  recordUnattributedSigninFailure,
  setSessionMerchant,
} from "../../store/dashboard.ts";
import { nowIso } from "../../store/store.ts";
import { Problem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";
import { addressOf, Code, Email, Me, me, Ok, Password } from "./common.ts";
import { auditUser, reserveSignin, secondFactor } from "./confirm.ts";
import { security, tags } from "./moneyCommon.ts";
import type { DashboardScope } from "./session.ts";
import { clearSessionCookie, setSessionCookie, signedIn } from "./session.ts";

/** Sign-in: the password, then TOTP or a recovery code, under the sign-in throttle. */
export function registerDashboardSignIn(api: App, ctx: ServiceContext): void {
  api.post(
    "/session",
    {
      schema: {
        operationId: "DashboardSignIn",
        tags,
        // Signing in needs no session: explicitly no security, so clients and docs do not look for one.
        security: [],
        summary: "Sign in (password, then the TOTP code when enabled); sets the session cookie",
        body: Type.Object(
          { email: Email, password: Password, code: Type.Optional(Code) },
          { additionalProperties: false },
        ),
        response: { 200: Me, ...problems(400, 401, 415, 429) },
      },
    },
    async (request, reply) => {
      const email = request.body.email.toLowerCase();
      // Counted before anything is checked (product §18): a throttled account gets 429 even for
      // the right password until its window ends.
      const reservation = await reserveSignin(ctx, request, reply, email);
      const login = await findUserByEmail(ctx.store, email);
      // The account in the merchant its session would start in (the login's oldest accepted
      // membership), else the membership it was first invited with: its audit lines go there.
      const user = login
        ? ((await findActiveMember(ctx.store, login.id, null)) ?? (await findMember(ctx.store, login.id)))
        : null;
      const passwordOk = await verifyPassword(login?.passwordHash ?? null, request.body.password);
      // Audited under the account when it exists; otherwise the address alone is kept.
      const fail = async (detail: string, what: string) => {
        await ctx.store.transaction((tx) =>
          user
            ? auditUser(tx, request, user, "session.sign_in_failed", what)
            : recordUnattributedSigninFailure(tx, addressOf(request), nowIso()),
        );
        return new Problem("signin_failed", detail);
      };
      // One answer for an unknown address, an unaccepted invitation and a wrong password.
      if (!user || !passwordOk) throw await fail("The email or password is wrong.", "password");
      if (user.totpEnabled) {
        const code = request.body.code;
        if (code === undefined) {
          // The password was right: this attempt is given back; the code comes with the next one.
          await ctx.store.transaction((tx) => release(tx, reservation));
          throw new Problem("totp_required", "Enter the code from your authenticator app.");
        }
        if ((await secondFactor(ctx, request, user, code)) === null) throw await fail("The code is wrong.", "code");
      }
      // The session starts in the login's oldest merchant; a login without one signs in nowhere.
      if (!user.accepted) throw await fail("The email or password is wrong.", "membership");
      const member = user;
      const created = await ctx.store.transaction(async (tx) => {
        await release(tx, reservation);
        const made = await createSession(tx, user.id, nowIso(), true, member.merchantId);
        await auditUser(tx, request, member, "session.sign_in", null);
        return made;
      });
      setSessionCookie(ctx, reply, created.token);
      return me(ctx, member, created.csrfToken);
    },
  );
}

/** The session: read it, switch merchant, sign out. */
export function registerDashboardSession(api: App, ctx: ServiceContext, scope: DashboardScope): void {
  registerSessionRead(api, ctx, scope);
  registerSessionMerchant(api, ctx, scope);
  registerSignOut(api, ctx, scope);
}

/** GET /session: who is signed in, for which merchant. */
function registerSessionRead(api: App, ctx: ServiceContext, scope: DashboardScope): void {
  const { session } = scope;
  api.get(
    "/session",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardSession",
        summary: "The signed-in user and their merchant",
        tags,
        security,
        response: { 200: Me, ...problems(401) },
      },
    },
    async (request) => {
      const { user, session: s } = signedIn(request);
      return me(ctx, user, s.csrfToken);
    },
  );
}

/** POST /session/merchant: switch to another merchant of this login. */
function registerSessionMerchant(api: App, ctx: ServiceContext, scope: DashboardScope): void {
  const { session } = scope;
  api.post(
    "/session/merchant",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardSwitchMerchant",
        tags,
        security,
        summary: "Work in another merchant this login belongs to (the account switcher); a step-up does not carry over",
        body: Type.Object(
          { merchantId: Type.String({ minLength: 1, maxLength: 100 }) },
          { additionalProperties: false },
        ),
        response: { 200: Me, ...problems(400, 401, 403, 404, 415) },
      },
    },
    async (request) => {
      const { user, session: s } = signedIn(request);
      const member = await findActiveMember(ctx.store, user.id, request.body.merchantId);
      if (!member) throw new Problem("merchant_not_found", "This login is not a member of that merchant.");
      await ctx.store.transaction(async (tx) => {
        await setSessionMerchant(tx, s.tokenHash, member.merchantId);
        await audit(
          tx,
          {
            merchantId: member.merchantId,
            userId: user.id,
            userEmail: user.email,
            action: "session.switch_merchant",
            target: user.merchantId,
            address: addressOf(request),
          },
          nowIso(),
        );
      });
      return me(ctx, member, s.csrfToken);
    },
  );
}

/** DELETE /session: sign out. */
function registerSignOut(api: App, ctx: ServiceContext, scope: DashboardScope): void {
  const { session, record } = scope;
  api.delete(
    "/session",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardSignOut",
        summary: "Sign out",
        tags,
        security,
        response: { 200: Ok, ...problems(401, 403) },
      },
    },
    async (request, reply) => {
      const { session: s } = signedIn(request);
      await ctx.store.transaction(async (tx) => {
        await deleteSession(tx, s.tokenHash);
        await record(request, tx, "session.sign_out", null);
      });
      clearSessionCookie(ctx, reply);
      return { ok: true as const };
    },
  );
}
