// The dashboard's JSON API under /dashboard/v1 (product §14): sign-in, sessions, TOTP, step-up, team, audit, API keys, overview.
import type { FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { describeEvent } from "../../domain/activity.ts";
import { isRole, PASSWORD_MIN_LENGTH, ROLES } from "../../domain/dashboardRoles.ts";
import { checkPassword, type PasswordRefusal } from "../../domain/passwordRules.ts";
import { assert, assertOk } from "../../domain/result.ts";
import {
  acceptInvitation,
  acceptTotpStep,
  audit,
  countOwners,
  createSession,
  type DashboardUser,
  deleteSession,
  deleteSessionsOf,
  deleteUser,
  disableTotp,
  enableTotp,
  findActiveMember,
  findMember,
  findUserByEmail,
  findUserByInvitation,
  listAudit,
  listUsers,
  loginMerchants,
  markStepUp,
  recordUnattributedSigninFailure,
  setPassword,
  setPendingTotp,
  setRole,
  setSessionMerchant,
  totpSecretContext,
} from "../../store/dashboard.ts";
import { listEvents } from "../../store/events.ts";
import { findMerchant, issueApiKey, listApiKeys, revokeApiKeyById } from "../../store/merchants.ts";
import { nowIso, type Tx } from "../../store/store.ts";
import { balancesOf } from "../admin/balances.ts";
import type { App } from "../app.ts";
import { Problem } from "../problem.ts";
import { problems } from "../schemas.ts";
import { type Reservation, release } from "../throttles.ts";
import { registerDashboardCallbacks } from "./callbacks.ts";
import { auditUser, confirmed, reserveSignin, secondFactor } from "./confirm.ts";
import {
  hashPassword,
  newRecoveryCodes,
  newTotpSecret,
  RECOVERY_CODE_COUNT,
  recoveryCodeHash,
  totpEnrolment,
  totpStep,
  verifyPassword,
} from "./credentials.ts";
import { inviteInto, TeamMember, teamMember } from "./invitations.ts";
import { registerDashboardInvoices } from "./invoices.ts";
import { registerDashboardMoney } from "./money.ts";
import { registerOverviewChart } from "./overviewChart.ts";
import { registerDashboardPaymentLinks } from "./paymentLinks.ts";
import {
  clearSessionCookie,
  requireRole,
  requireSession,
  requireStepUp,
  setSessionCookie,
  signedIn,
} from "./session.ts";

export const DASHBOARD_PREFIX = "/dashboard/v1";
const tags = ["dashboard"];
const security = [{ dashboardSession: [] }];
/** How many of the newest events the overview shows as recent activity. */
const RECENT_ACTIVITY = 10;

const Email = Type.String({ minLength: 3, maxLength: 254, pattern: "^[^\\s@]+@[^\\s@]+$" });
const Password = Type.String({ minLength: 1, maxLength: 1024 });
const Code = Type.String({ minLength: 1, maxLength: 32 });
const RoleSchema = Type.Union(ROLES.map((r) => Type.Literal(r)));
const Me = Type.Object(
  {
    user: TeamMember,
    merchant: Type.Object(
      { id: Type.String(), name: Type.Union([Type.String(), Type.Null()]) },
      { additionalProperties: false },
    ),
    /** Every merchant this login belongs to: the account switcher's choices. */
    merchants: Type.Array(
      Type.Object(
        { id: Type.String(), name: Type.Union([Type.String(), Type.Null()]), role: Type.String() },
        { additionalProperties: false },
      ),
    ),
    csrfToken: Type.String(),
  },
  { additionalProperties: false },
);
const Ok = Type.Object({ ok: Type.Literal(true) }, { additionalProperties: false });
const UserIdParams = Type.Object(
  { userId: Type.String({ minLength: 1, maxLength: 100 }) },
  { additionalProperties: false },
);

/** The audit log's address: the client's own (an IPv6 client's whole address, not the /64 the limits count). */
function addressOf(request: FastifyRequest): string {
  return request.ip;
}

const PASSWORD_REFUSALS: Record<PasswordRefusal, string> = {
  password_too_short: `A password has at least ${PASSWORD_MIN_LENGTH} characters.`,
  password_blank: "A password is not only whitespace.",
  password_too_common:
    "This password is too common or too easy to guess; choose another (a few unrelated words work well).",
};

/** The rules of a new password (product §18), refused as a 400 with the rule's code. */
async function checkPasswordRules(password: string, pointer: string): Promise<void> {
  const checked = await checkPassword(password);
  if (!checked.ok) {
    const detail = PASSWORD_REFUSALS[checked.error];
    throw new Problem(checked.error, detail, [{ pointer, detail }]);
  }
}

async function me(ctx: ServiceContext, user: DashboardUser, csrfToken: string) {
  const merchant = await findMerchant(ctx.store, user.merchantId);
  assert(merchant, "a dashboard user's merchant exists");
  return {
    user: teamMember(user),
    merchant: { id: merchant.id, name: merchant.merchantName },
    merchants: await loginMerchants(ctx.store, user.id),
    csrfToken,
  };
}

/**
 * An existing login accepting an invitation proves itself as at sign-in: the inviter holds the
 * link, so the password is checked under the sign-in throttle and TOTP is asked for. Failures are
 * audited in the merchant the login works in. Answers the attempt's reservation, to give back.
 */
async function existingLogin(
  ctx: ServiceContext,
  request: FastifyRequest<{ Body: { password: string; code?: string } }>,
  reply: FastifyReply,
  invited: DashboardUser,
): Promise<Reservation> {
  const reservation = await reserveSignin(ctx, request, reply, invited.email);
  const user = (await findActiveMember(ctx.store, invited.id, null)) ?? invited;
  const fail = async (detail: string, what: string) => {
    await ctx.store.transaction((tx) => auditUser(tx, request, user, "session.sign_in_failed", what));
    return new Problem("signin_failed", detail);
  };
  if (!(await verifyPassword(user.passwordHash, request.body.password)))
    throw await fail("The password is wrong: accept with the password of your login.", "invitation password");
  if (user.totpEnabled) {
    const code = request.body.code;
    if (code === undefined) {
      await ctx.store.transaction((tx) => release(tx, reservation));
      throw new Problem("totp_required", "Enter the code from your authenticator app.");
    }
    if ((await secondFactor(ctx, request, user, code)) === null)
      throw await fail("The code is wrong.", "invitation code");
  }
  return reservation;
}

export function registerDashboardApi(app: App, ctx: ServiceContext): void {
  app.register(
    async (scope) => {
      const api = scope as unknown as App;
      const session = requireSession(ctx);
      const record = (request: FastifyRequest, tx: Tx, action: string, target: string | null) => {
        const { user } = signedIn(request);
        return audit(
          tx,
          {
            merchantId: user.merchantId,
            userId: user.id,
            userEmail: user.email,
            action,
            target,
            address: addressOf(request),
          },
          nowIso(),
        );
      };

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

      api.post(
        "/session/merchant",
        {
          onRequest: session,
          schema: {
            operationId: "DashboardSwitchMerchant",
            tags,
            security,
            summary:
              "Work in another merchant this login belongs to (the account switcher); a step-up does not carry over",
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

      api.post(
        "/invitations/accept",
        {
          schema: {
            operationId: "DashboardAcceptInvitation",
            tags,
            security: [],
            summary: "Accept an invitation by setting a password; signs in",
            body: Type.Object(
              { token: Type.String({ minLength: 1, maxLength: 200 }), password: Password, code: Type.Optional(Code) },
              { additionalProperties: false },
            ),
            response: { 200: Me, ...problems(400, 401, 404, 415, 429) },
          },
        },
        async (request, reply) => {
          const invalid = () => new Problem("invitation_invalid", "This invitation is unknown, used or expired.");
          const user = await findUserByInvitation(ctx.store, request.body.token);
          if (!user || user.inviteExpiresAt === null || Date.parse(user.inviteExpiresAt) <= Date.now()) {
            // The password's rules first for a new login's invitation, as before; an unknown token learns no more.
            await checkPasswordRules(request.body.password, "/password");
            throw invalid();
          }
          // A login that exists (a member of another merchant) joins with its own password; a new one sets it.
          let passwordHash: string | null = null;
          let reservation: Reservation | null = null;
          if (user.passwordHash === null) {
            await checkPasswordRules(request.body.password, "/password");
            passwordHash = await hashPassword(request.body.password);
          } else {
            reservation = await existingLogin(ctx, request, reply, user);
          }
          const created = await ctx.store.transaction(async (tx) => {
            if (!(await acceptInvitation(tx, user, passwordHash, nowIso()))) throw invalid();
            if (reservation) await release(tx, reservation);
            await audit(
              tx,
              {
                merchantId: user.merchantId,
                userId: user.id,
                userEmail: user.email,
                action: "invitation.accept",
                target: user.id,
                address: addressOf(request),
              },
              nowIso(),
            );
            return createSession(tx, user.id, nowIso(), true, user.merchantId);
          });
          setSessionCookie(ctx, reply, created.token);
          return me(
            ctx,
            { ...user, accepted: true, passwordHash: passwordHash ?? user.passwordHash },
            created.csrfToken,
          );
        },
      );

      api.post(
        "/step-up",
        {
          onRequest: session,
          schema: {
            operationId: "DashboardStepUp",
            tags,
            security,
            summary: "Confirm with the password or a TOTP code; sensitive actions are allowed for 5 minutes",
            body: Type.Object(
              { password: Type.Optional(Password), code: Type.Optional(Code) },
              { additionalProperties: false },
            ),
            response: { 200: Ok, ...problems(400, 401, 403, 415, 429) },
          },
        },
        async (request, reply) => {
          const { user, session: s } = signedIn(request);
          const { password, code } = request.body;
          let by: string | null = null;
          const check = async () => {
            if (password !== undefined && (await verifyPassword(user.passwordHash, password))) by = "password";
            else if (code !== undefined) by = await secondFactor(ctx, request, user, code);
            return by !== null;
          };
          const failure = () => new Problem("step_up_failed", "The password or code is wrong.");
          await confirmed(ctx, request, reply, "step_up", check, failure, async (tx) => {
            await markStepUp(tx, s.tokenHash, nowIso());
            await record(request, tx, "session.step_up", by);
          });
          return { ok: true as const };
        },
      );

      registerDashboardMoney(api, ctx, { session, record });
      registerOverviewChart(api, ctx, { session });

      api.get(
        "/overview",
        {
          onRequest: session,
          schema: {
            operationId: "DashboardOverview",
            summary: "Balances and recent activity",
            tags,
            security,
            response: {
              200: Type.Object(
                {
                  balances: Type.Array(
                    Type.Object({ currency: Type.String(), available: Type.String() }, { additionalProperties: false }),
                  ),
                  recent: Type.Array(
                    Type.Object(
                      {
                        id: Type.String(),
                        type: Type.String({ description: "The event's type, e.g. invoice.completed" }),
                        subjectId: Type.String({ description: "The invoice, withdrawal or refund it is about" }),
                        summary: Type.String({ description: "What happened, as an English sentence with its amounts" }),
                        createdAt: Type.String(),
                      },
                      { additionalProperties: false },
                    ),
                    { description: `The merchant's ${RECENT_ACTIVITY} newest events, newest first` },
                  ),
                },
                { additionalProperties: false },
              ),
              ...problems(401),
            },
          },
        },
        async (request) => {
          const { user } = requireRole(request, "read");
          const events = await listEvents(ctx.store, user.merchantId, { limit: RECENT_ACTIVITY });
          // No cursor and no dates: nothing in this window can be refused.
          assertOk(events, "the newest events can be listed");
          return {
            balances: await balancesOf(ctx.store, user.merchantId),
            recent: events.value.data.map((e) => ({
              id: e.id,
              type: e.type,
              subjectId: e.subjectId,
              summary: describeEvent(e.type, e.body),
              createdAt: e.createdAt,
            })),
          };
        },
      );

      const ApiKeyItem = Type.Object(
        {
          id: Type.String(),
          prefix: Type.String({ description: "The key's first characters, to recognise it" }),
          legacy: Type.Boolean(),
          createdAt: Type.String(),
          lastUsedAt: Type.Union([Type.String(), Type.Null()]),
          revokedAt: Type.Union([Type.String(), Type.Null()]),
        },
        { additionalProperties: false },
      );
      api.get(
        "/api-keys",
        {
          onRequest: session,
          schema: {
            operationId: "DashboardListApiKeys",
            summary: "The merchant's API keys",
            tags,
            security,
            response: { 200: Type.Array(ApiKeyItem), ...problems(401) },
          },
        },
        async (request) => listApiKeys(ctx.store, requireRole(request, "read").user.merchantId),
      );
      api.post(
        "/api-keys",
        {
          onRequest: session,
          schema: {
            operationId: "DashboardCreateApiKey",
            tags,
            security,
            summary: "Create an API key; its secret is in this answer only (needs a step-up)",
            response: {
              200: Type.Object({ apiKey: Type.String(), secretKey: Type.String() }, { additionalProperties: false }),
              ...problems(401, 403),
            },
          },
        },
        async (request) => {
          const { user } = requireRole(request, "manageApiKeys");
          requireStepUp(request);
          return ctx.store.transaction(async (tx) => {
            const issued = await issueApiKey(tx, ctx.box, user.merchantId, false, nowIso());
            await record(request, tx, "api_key.create", issued.apiKey.slice(0, 10));
            return { apiKey: issued.apiKey, secretKey: issued.secretKey as string };
          });
        },
      );
      api.delete(
        "/api-keys/:id",
        {
          onRequest: session,
          schema: {
            operationId: "DashboardRevokeApiKey",
            summary: "Revoke an API key",
            tags,
            security,
            params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) }, { additionalProperties: false }),
            response: { 200: Ok, ...problems(401, 403, 404) },
          },
        },
        async (request) => {
          const { user } = requireRole(request, "manageApiKeys");
          await ctx.store.transaction(async (tx) => {
            if (!(await revokeApiKeyById(tx, user.merchantId, request.params.id, nowIso())))
              throw new Problem("api_key_not_found", "No live API key with this id.");
            await record(request, tx, "api_key.revoke", request.params.id);
          });
          return { ok: true as const };
        },
      );

      api.get(
        "/team",
        {
          onRequest: session,
          schema: {
            operationId: "DashboardListTeam",
            summary: "The merchant's team",
            tags,
            security,
            response: { 200: Type.Array(TeamMember), ...problems(401) },
          },
        },
        async (request) => (await listUsers(ctx.store, requireRole(request, "read").user.merchantId)).map(teamMember),
      );
      api.post(
        "/team",
        {
          onRequest: session,
          schema: {
            operationId: "DashboardInvite",
            tags,
            security,
            summary: "Invite a user (owners; needs a step-up)",
            body: Type.Object({ email: Email, role: RoleSchema }, { additionalProperties: false }),
            response: {
              200: Type.Object({ userId: Type.String(), inviteUrl: Type.String() }, { additionalProperties: false }),
              ...problems(400, 401, 403, 409, 415),
            },
          },
        },
        async (request) => {
          const { user } = requireRole(request, "manageTeam");
          requireStepUp(request);
          return ctx.store.transaction(async (tx) => {
            const invited = await inviteInto(ctx, tx, user.merchantId, request.body.email, request.body.role);
            await record(request, tx, "team.invite", `${request.body.email.toLowerCase()} as ${request.body.role}`);
            return invited;
          });
        },
      );
      api.patch(
        "/team/:userId",
        {
          onRequest: session,
          schema: {
            operationId: "DashboardChangeRole",
            summary: "Change a team member's role",
            tags,
            security,
            params: UserIdParams,
            body: Type.Object({ role: RoleSchema }, { additionalProperties: false }),
            response: { 200: TeamMember, ...problems(400, 401, 403, 404, 409, 415) },
          },
        },
        async (request) => {
          const { user } = requireRole(request, "manageTeam");
          requireStepUp(request);
          return ctx.store.transaction(async (tx) => {
            const target = await findMember(tx, request.params.userId);
            if (!target || target.merchantId !== user.merchantId)
              throw new Problem("user_not_found", "No such user in your team.");
            const role = request.body.role;
            assert(isRole(role), "schema admits roles only");
            if (
              target.role === "owner" &&
              role !== "owner" &&
              target.accepted &&
              (await countOwners(tx, user.merchantId)) <= 1
            )
              throw new Problem("last_owner", "The team keeps at least one owner.");
            await setRole(tx, target.membershipId, role);
            await record(request, tx, "team.change_role", `${target.email} to ${role}`);
            return teamMember({ ...target, role });
          });
        },
      );
      api.delete(
        "/team/:userId",
        {
          onRequest: session,
          schema: {
            operationId: "DashboardRemoveUser",
            summary: "Remove a team member",
            tags,
            security,
            params: UserIdParams,
            response: { 200: Ok, ...problems(401, 403, 404, 409) },
          },
        },
        async (request) => {
          const { user } = requireRole(request, "manageTeam");
          requireStepUp(request);
          await ctx.store.transaction(async (tx) => {
            const target = await findMember(tx, request.params.userId);
            if (!target || target.merchantId !== user.merchantId)
              throw new Problem("user_not_found", "No such user in your team.");
            if (target.role === "owner" && target.accepted && (await countOwners(tx, user.merchantId)) <= 1)
              throw new Problem("last_owner", "The team keeps at least one owner.");
            await deleteUser(tx, target);
            await record(request, tx, "team.remove", target.email);
          });
          return { ok: true as const };
        },
      );

      api.get(
        "/audit",
        {
          onRequest: session,
          schema: {
            operationId: "DashboardAuditLog",
            summary: "The audit log, newest first",
            tags,
            security,
            querystring: Type.Object(
              {
                before: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
                limit: Type.Optional(Type.String({ pattern: "^(?:[1-9][0-9]?|100)$" })),
              },
              { additionalProperties: false },
            ),
            response: {
              200: Type.Object(
                {
                  items: Type.Array(
                    Type.Object(
                      {
                        id: Type.String(),
                        userId: Type.Union([Type.String(), Type.Null()]),
                        userEmail: Type.Union([Type.String(), Type.Null()]),
                        action: Type.String(),
                        target: Type.Union([Type.String(), Type.Null()]),
                        address: Type.Union([Type.String(), Type.Null()]),
                        createdAt: Type.String(),
                      },
                      { additionalProperties: false },
                    ),
                  ),
                  nextBefore: Type.Union([Type.String(), Type.Null()]),
                },
                { additionalProperties: false },
              ),
              ...problems(400, 401, 403),
            },
          },
        },
        async (request) => {
          const { user } = requireRole(request, "readAudit");
          const limit = Number(request.query.limit ?? "50");
          const items = await listAudit(ctx.store, user.merchantId, request.query.before, limit);
          const last = items.at(-1);
          return { items, nextBefore: items.length === limit && last ? last.id : null };
        },
      );

      api.post(
        "/account/password",
        {
          onRequest: session,
          schema: {
            operationId: "DashboardChangePassword",
            tags,
            security,
            summary: "Change the password (ends the user's other sessions)",
            body: Type.Object({ currentPassword: Password, newPassword: Password }, { additionalProperties: false }),
            response: { 200: Ok, ...problems(400, 401, 403, 415, 429) },
          },
        },
        async (request, reply) => {
          const { user, session: s } = signedIn(request);
          await checkPasswordRules(request.body.newPassword, "/newPassword");
          const passwordHash = await hashPassword(request.body.newPassword);
          const check = () => verifyPassword(user.passwordHash, request.body.currentPassword);
          const failure = () => new Problem("step_up_failed", "The current password is wrong.");
          await confirmed(ctx, request, reply, "change_password", check, failure, async (tx) => {
            await setPassword(tx, user.id, passwordHash);
            await deleteSessionsOf(tx, user.id, s.tokenHash);
            await record(request, tx, "account.change_password", null);
          });
          return { ok: true as const };
        },
      );

      api.post(
        "/account/totp/setup",
        {
          onRequest: session,
          schema: {
            operationId: "DashboardTotpSetup",
            tags,
            security,
            summary: "Start TOTP enrolment: a new secret, its otpauth URL and QR code (needs a step-up)",
            response: {
              200: Type.Object(
                { secret: Type.String(), otpauthUrl: Type.String(), qrCodeSvg: Type.String() },
                { additionalProperties: false },
              ),
              ...problems(401, 403),
            },
          },
        },
        async (request) => {
          const { user } = signedIn(request);
          requireStepUp(request);
          if (user.totpEnabled) throw new Problem("conflict", "TOTP is already enabled; disable it first.");
          const secret = newTotpSecret();
          await ctx.store.transaction((tx) => setPendingTotp(tx, ctx.box, user.id, secret));
          return { secret, ...(await totpEnrolment(secret, user.email)) };
        },
      );
      api.post(
        "/account/totp/enable",
        {
          onRequest: session,
          schema: {
            operationId: "DashboardTotpEnable",
            tags,
            security,
            summary: "Finish TOTP enrolment with a code; answers the recovery codes, once",
            body: Type.Object({ code: Code }, { additionalProperties: false }),
            response: {
              200: Type.Object({ recoveryCodes: Type.Array(Type.String()) }, { additionalProperties: false }),
              ...problems(400, 401, 403, 409, 415, 429),
            },
          },
        },
        async (request, reply) => {
          const { user } = signedIn(request);
          if (user.totpEnabled) throw new Problem("conflict", "TOTP is already enabled.");
          if (user.totpSecretEncrypted === null) throw new Problem("totp_not_enrolled", "Start the enrolment first.");
          const secret = ctx.box.open(user.totpSecretEncrypted, totpSecretContext(user.id));
          // The enrolment's code is spent too: it cannot confirm anything afterwards.
          const check = async () => {
            const step = totpStep(secret, request.body.code.trim());
            return step !== null && (await ctx.store.transaction((tx) => acceptTotpStep(tx, user.id, step)));
          };
          const failure = () => new Problem("totp_invalid", "The code is wrong; try the current one.");
          const recoveryCodes = newRecoveryCodes();
          await confirmed(ctx, request, reply, "enable_totp", check, failure, async (tx) => {
            await enableTotp(tx, user.id, recoveryCodes.map(recoveryCodeHash));
            await record(request, tx, "account.enable_totp", null);
            await record(request, tx, "account.issue_recovery_codes", `${RECOVERY_CODE_COUNT} codes`);
          });
          return { recoveryCodes };
        },
      );
      api.post(
        "/account/totp/disable",
        {
          onRequest: session,
          schema: {
            operationId: "DashboardTotpDisable",
            tags,
            security,
            summary: "Disable TOTP (needs a current TOTP code or an unused recovery code, not the password alone)",
            body: Type.Object({ code: Code }, { additionalProperties: false }),
            response: { 200: Ok, ...problems(400, 401, 403, 409, 415, 429) },
          },
        },
        async (request, reply) => {
          const { user } = signedIn(request);
          if (!user.totpEnabled) throw new Problem("conflict", "TOTP is not enabled.");
          let by: string | null = null;
          const check = async () => {
            by = await secondFactor(ctx, request, user, request.body.code);
            return by !== null;
          };
          const failure = () => new Problem("step_up_failed", "The code is wrong.");
          await confirmed(ctx, request, reply, "disable_totp", check, failure, async (tx) => {
            await disableTotp(tx, user.id);
            await record(request, tx, "account.disable_totp", by);
            await record(request, tx, "account.revoke_recovery_codes", null);
          });
          return { ok: true as const };
        },
      );

      registerDashboardInvoices(api, ctx, { session, record });
      registerDashboardPaymentLinks(api, ctx, { session, record });
      registerDashboardCallbacks(api, ctx, { session, record });
    },
    { prefix: DASHBOARD_PREFIX },
  );
}
