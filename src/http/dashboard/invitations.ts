// Dashboard invitations: accept one, as a new login (setting its password) or as an existing login proving itself.
import type { FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { hashPassword, verifyPassword } from "../../app/credentials.ts";
import { passwordRefusal } from "../../app/signIn.ts";
import { type Reservation, release } from "../../app/throttles.ts";
import {
  acceptInvitation,
  audit,
  createSession,
  type DashboardUser,
  findActiveMember,
  findUserByInvitation,
} from "../../store/dashboard.ts";
import { nowIso } from "../../store/store.ts";
import { Problem, throwIfRefused } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";
import { addressOf, Code, Me, me, Password } from "./common.ts";
import { auditUser, reserveSignin, secondFactor } from "./confirm.ts";
import { tags } from "./moneyCommon.ts";
import { setSessionCookie } from "./session.ts";

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

export function registerDashboardInvitationAccept(api: App, ctx: ServiceContext): void {
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
        throwIfRefused(await passwordRefusal(request.body.password, "/password"));
        throw invalid();
      }
      // A login that exists (a member of another merchant) joins with its own password; a new one sets it.
      let passwordHash: string | null = null;
      let reservation: Reservation | null = null;
      if (user.passwordHash === null) {
        throwIfRefused(await passwordRefusal(request.body.password, "/password"));
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
      return me(ctx, { ...user, accepted: true, passwordHash: passwordHash ?? user.passwordHash }, created.csrfToken);
    },
  );
}
