// Invite a dashboard user into a merchant's team (the operator API and owners in the dashboard share it).

import { INVITATION_MS, type Role } from "../domain/dashboardRoles.ts";
import { inviteUser } from "../store/dashboard.ts";
import type { Tx } from "../store/store.ts";
import { nowIso } from "../store/store.ts";
import type { ServiceContext } from "./context.ts";
import type { Outcome } from "./refusal.ts";

/**
 * The token travels in the URL's fragment, which browsers never send: it stays out of every access
 * log. An email that is unknown, only invited, or a login of another merchant gets the same answer
 * (product §18); the invitation adds a membership to an existing login when that login accepts it.
 * Refused (email_taken), the caller's transaction is to roll back.
 */
export async function inviteInto(
  ctx: ServiceContext,
  tx: Tx,
  merchantId: string,
  email: string,
  role: Role,
): Promise<Outcome<{ userId: string; inviteUrl: string }, "email_taken">> {
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
    const detail = "This email is already a member of this team.";
    return {
      ok: false,
      refusal: { code: "email_taken", detail, pointer: "/email", fieldDetail: "is a member of this team" },
    };
  }
  const inviteUrl = `${ctx.config.publicBaseUrl.replace(/\/$/, "")}/dashboard/accept#token=${invited.token}`;
  return { ok: true, value: { userId: invited.userId, inviteUrl } };
}
