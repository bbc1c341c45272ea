// One dashboard login may belong to several merchants (product §18): memberships, and the merchant each session works in.
import { type Kysely, sql } from "kysely";

/**
 * `dashboard_users` stays the login (email, password, TOTP); what a login may do for which merchant
 * moves to `dashboard_memberships`, with the invitation that creates each one. Every existing user
 * becomes one membership under the same id (an accepted one when the user had set a password, else
 * a pending one carrying the user's invitation), so team ids, invitation links and sessions stay
 * valid. A session now names the merchant it works in; existing ones keep their user's merchant.
 * The old columns `dashboard_users.merchant_id`, `role`, `invite_hash` and `invite_expires_at` are
 * kept as they were (the login's first merchant) and no longer read.
 */
export const dashboardMemberships = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable("dashboard_memberships")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("user_id", "text", (c) => c.notNull().references("dashboard_users.id"))
      .addColumn("merchant_id", "text", (c) => c.notNull().references("merchants.id"))
      .addColumn("role", "text", (c) => c.notNull())
      // SHA-256 of the single-use invitation token; null once accepted.
      .addColumn("invite_hash", "text", (c) => c.unique())
      .addColumn("invite_expires_at", "text")
      // Null while the invitation is pending.
      .addColumn("accepted_at", "text")
      .addColumn("created_at", "text", (c) => c.notNull())
      .addUniqueConstraint("dashboard_memberships_user_merchant", ["user_id", "merchant_id"])
      .execute();
    await db.schema
      .createIndex("dashboard_memberships_merchant")
      .on("dashboard_memberships")
      .column("merchant_id")
      .execute();
    await sql`insert into dashboard_memberships
      (id, user_id, merchant_id, role, invite_hash, invite_expires_at, accepted_at, created_at)
      select id, id, merchant_id, role, invite_hash, invite_expires_at,
        case when password_hash is null then null else created_at end, created_at
      from dashboard_users`.execute(db);
    await sql`update dashboard_users set invite_hash = null`.execute(db);
    await db.schema.alterTable("dashboard_sessions").addColumn("merchant_id", "text").execute();
    await sql`update dashboard_sessions set merchant_id =
      (select merchant_id from dashboard_users where dashboard_users.id = dashboard_sessions.user_id)`.execute(db);
  },
};
