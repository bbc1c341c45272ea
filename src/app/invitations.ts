// Invite a dashboard user into a merchant's team (the operator API and owners in the dashboard share it).

import { INVITATION_MS, type Role } from "../domain/dashboardRoles.ts";
import { inviteUser } from "../store/dashboard.ts";
import type { Tx } from "../store/store.ts";
import { nowIso } from "../store/store.ts";
import type { ServiceContext } from "./context.ts";
import { Problem } from "./problem.ts";

/**
 * The token travels in the URL's fragment, which browsers never send: it stays out of every access
 * log. An email that is unknown, only invited, or a login of another merchant gets the same answer
 * (product §18); the invitation adds a membership to an existing login when that login accepts it.
 */
export async function inviteInto(
  ctx: ServiceContext,
  tx: Tx,
  merchantId: string,
  email: string,
  role: Role,
): Promise<{ userId: string; inviteUrl: string }> {
  const address = email.toLowerCase();
  const now = Date.now();
  const invited = await inviteUser(
    tx,
    merchantId,
    address,
    role,
    new Date(now + INVITATION_MS).toISOString(),
    nowIso(),
  );
  if (!invited.ok) {
    // Only a member of this very merchant, whom its team list shows already.
    throw new Problem("email_taken", "This email is already a member of this team.", [
      { pointer: "/email", detail: "is a member of this team" },
    ]);
  }
  return {
    userId: invited.userId,
    inviteUrl: `${ctx.config.publicBaseUrl.replace(/\/$/, "")}/dashboard/accept#token=${invited.token}`,
  };
}
