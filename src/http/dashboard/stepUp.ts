// Dashboard step-up: a signed-in user confirms again (password or a second factor) before a sensitive action.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { verifyPassword } from "../../app/credentials.ts";
import { markStepUp } from "../../store/dashboard.ts";
import { nowIso } from "../../store/store.ts";
import { Problem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";
import { Code, Ok, Password } from "./common.ts";
import { confirmed, secondFactor } from "./confirm.ts";
import { security, tags } from "./moneyCommon.ts";
import type { DashboardScope } from "./session.ts";
import { signedIn } from "./session.ts";

export function registerDashboardStepUp(api: App, ctx: ServiceContext, { session, record }: DashboardScope): void {
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
}
