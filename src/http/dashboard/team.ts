// Dashboard team: list, invite, change the role of and remove the merchant's dashboard users (owners).
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { inviteInto } from "../../app/invitations.ts";
import { isRole } from "../../domain/dashboardRoles.ts";
import { invariantViolation } from "../../domain/result.ts";
import { countOwners, deleteUser, findMember, listUsers, setRole } from "../../store/dashboard.ts";
import { Problem, valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";
import { TeamMember, teamMember } from "../shapes.ts";
import { Email, Ok, RoleSchema, UserIdParams } from "./common.ts";
import { security, tags } from "./moneyCommon.ts";
import type { DashboardScope } from "./session.ts";
import { requireRole, requireStepUp } from "./session.ts";

/** The team: list it, invite into it (owners). */
export function registerDashboardTeam(api: App, ctx: ServiceContext, { session, record }: DashboardScope): void {
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
        // A refusal thrown here rolls the invitation's transaction back.
        const invited = valueOrProblem(
          await inviteInto(ctx, tx, user.merchantId, request.body.email, request.body.role),
        );
        await record(request, tx, "team.invite", `${request.body.email.toLowerCase()} as ${request.body.role}`);
        return invited;
      });
    },
  );
}

/** One team member: change the role, remove (owners; step-up). */
export function registerDashboardTeamMember(api: App, ctx: ServiceContext, { session, record }: DashboardScope): void {
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
        if (!isRole(role)) throw invariantViolation("schema admits roles only");
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
}
