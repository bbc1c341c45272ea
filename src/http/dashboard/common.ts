// What the dashboard's account routes share: the field shapes, the signed-in user's own view, the client's address.
import type { FastifyRequest } from "fastify";
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { ROLES } from "../../domain/dashboardRoles.ts";
import { invariantViolation } from "../../domain/result.ts";
import { type DashboardUser, loginMerchants } from "../../store/dashboard.ts";
import { findMerchant } from "../../store/merchants.ts";
import { TeamMember, teamMember } from "../shapes.ts";

/** How many of the newest events the overview shows as recent activity. */
export const RECENT_ACTIVITY = 10;

export const Email = Type.String({ minLength: 3, maxLength: 254, pattern: "^[^\\s@]+@[^\\s@]+$" });
export const Password = Type.String({ minLength: 1, maxLength: 1024 });
export const Code = Type.String({ minLength: 1, maxLength: 32 });
export const RoleSchema = Type.Union(ROLES.map((r) => Type.Literal(r)));
export const Me = Type.Object(
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
export const Ok = Type.Object({ ok: Type.Literal(true) }, { additionalProperties: false });
export const UserIdParams = Type.Object(
  { userId: Type.String({ minLength: 1, maxLength: 100 }) },
  { additionalProperties: false },
);

export async function me(ctx: ServiceContext, user: DashboardUser, csrfToken: string) {
  const merchant = await findMerchant(ctx.store, user.merchantId);
  if (!merchant) throw invariantViolation("a dashboard user's merchant exists");
  return {
    user: teamMember(user),
    merchant: { id: merchant.id, name: merchant.merchantName },
    merchants: await loginMerchants(ctx.store, user.id),
    csrfToken,
  };
}

/** The audit log's address: the client's own (an IPv6 client's whole address, not the /64 the limits count). */
export function addressOf(request: FastifyRequest): string {
  return request.ip;
}
