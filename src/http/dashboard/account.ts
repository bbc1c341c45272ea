// Dashboard account: change the password; set up, enable and disable TOTP.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import {
  hashPassword,
  newRecoveryCodes,
  newTotpSecret,
  RECOVERY_CODE_COUNT,
  recoveryCodeHash,
  totpEnrolment,
  totpStep,
  verifyPassword,
} from "../../app/credentials.ts";
import { passwordRefusal } from "../../app/signIn.ts";
import {
  acceptTotpStep,
  deleteSessionsOf,
  disableTotp,
  enableTotp,
  setPassword,
  setPendingTotp,
  totpSecretContext,
} from "../../store/dashboard.ts";
import { Problem, throwIfRefused } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";
import { Code, Ok, Password } from "./common.ts";
import { confirmed, secondFactor } from "./confirm.ts";
import { security, tags } from "./moneyCommon.ts";
import type { DashboardScope } from "./session.ts";
import { requireStepUp, signedIn } from "./session.ts";

/** Changing the password (a step-up with the current one). */
export function registerDashboardPassword(api: App, ctx: ServiceContext, { session, record }: DashboardScope): void {
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
      throwIfRefused(await passwordRefusal(request.body.newPassword, "/newPassword"));
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
}

/** TOTP: set up, enable, disable. */
export function registerDashboardTotp(api: App, ctx: ServiceContext, scope: DashboardScope): void {
  registerTotpSetup(api, ctx, scope);
  registerTotpEnable(api, ctx, scope);
  registerTotpDisable(api, ctx, scope);
}

/** POST /account/totp/setup: a new secret to enrol, after a step-up. */
function registerTotpSetup(api: App, ctx: ServiceContext, scope: DashboardScope): void {
  const { session } = scope;
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
}

/** POST /account/totp/enable: the enrolment confirmed with a code; the recovery codes, once. */
function registerTotpEnable(api: App, ctx: ServiceContext, scope: DashboardScope): void {
  const { session, record } = scope;
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
}

/** POST /account/totp/disable: with a TOTP or recovery code. */
function registerTotpDisable(api: App, ctx: ServiceContext, scope: DashboardScope): void {
  const { session, record } = scope;
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
}
