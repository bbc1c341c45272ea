// Operator API: a merchant's dashboard users (product §14): invite, list, remove.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { inviteInto } from "../../app/invitations.ts";
import { ROLES } from "../../domain/dashboardRoles.ts";
import { deleteUser, findMember, listUsers } from "../../store/dashboard.ts";
import { findMerchant } from "../../store/merchants.ts";
import { Problem, valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";
import { TeamMember, teamMember } from "../shapes.ts";
import { MerchantIdParams } from "./schemas.ts";

/** Every route here: the operator's bearer token. */
const security = [{ adminToken: [] }];

const merchantNotFound = () => new Problem("merchant_not_found", "No merchant with this id.");

export function registerAdminDashboardUsers(app: App, ctx: ServiceContext): void {
  registerAdminInviteDashboardUser(app, ctx);
  registerAdminListDashboardUsers(app, ctx);
  registerAdminRemoveDashboardUser(app, ctx);
}

function registerAdminInviteDashboardUser(app: App, ctx: ServiceContext): void {
  app.post(
    "/merchants/:id/users",
    {
      schema: {
        operationId: "AdminInviteDashboardUser",
        tags: ["operator"],
        security,
        summary: "Invite a dashboard user: a single-use invitation URL valid 72 hours",
        params: MerchantIdParams,
        body: Type.Object(
          {
            email: Type.String({ minLength: 3, maxLength: 254, pattern: "^[^\\s@]+@[^\\s@]+$" }),
            role: Type.Union(ROLES.map((r) => Type.Literal(r))),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({ userId: Type.String(), inviteUrl: Type.String() }, { additionalProperties: false }),
          ...problems(400, 401, 404, 409, 415),
        },
      },
    },
    async (request) =>
      ctx.store.transaction(async (tx) => {
        if (!(await findMerchant(tx, request.params.id))) throw merchantNotFound();
        return valueOrProblem(await inviteInto(ctx, tx, request.params.id, request.body.email, request.body.role));
      }),
  );
}

function registerAdminListDashboardUsers(app: App, ctx: ServiceContext): void {
  app.get(
    "/merchants/:id/users",
    {
      schema: {
        operationId: "AdminListDashboardUsers",
        summary: "The merchant's dashboard users",
        tags: ["operator"],
        security,
        params: MerchantIdParams,
        response: { 200: Type.Array(TeamMember), ...problems(401, 404) },
      },
    },
    async (request) => {
      if (!(await findMerchant(ctx.store, request.params.id))) throw merchantNotFound();
      return (await listUsers(ctx.store, request.params.id)).map(teamMember);
    },
  );
}

function registerAdminRemoveDashboardUser(app: App, ctx: ServiceContext): void {
  app.delete(
    "/merchants/:id/users/:userId",
    {
      schema: {
        operationId: "AdminRemoveDashboardUser",
        summary: "Remove a dashboard user",
        tags: ["operator"],
        security,
        params: Type.Object(
          { id: Type.String({ minLength: 1, maxLength: 100 }), userId: Type.String({ minLength: 1, maxLength: 100 }) },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({ removed: Type.Literal(true) }, { additionalProperties: false }),
          ...problems(401, 404),
        },
      },
    },
    async (request) => {
      await ctx.store.transaction(async (tx) => {
        const member = await findMember(tx, request.params.userId);
        if (!member || member.merchantId !== request.params.id)
          throw new Problem("user_not_found", "No such dashboard user.");
        await deleteUser(tx, member);
      });
      return { removed: true as const };
    },
  );
}
