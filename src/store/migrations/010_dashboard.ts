// The merchant's dashboard (product §14): its users, their sessions, sign-in attempts (throttling) and the audit log.
import type { Kysely } from "kysely";

export const dashboard = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable("dashboard_users")
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("merchant_id", "text", (c) => c.notNull().references("merchants.id"))
      // Lowercased; one account per address across merchants, so sign-in needs only the address.
      .addColumn("email", "text", (c) => c.notNull().unique())
      .addColumn("role", "text", (c) => c.notNull())
      // argon2id (PHC string); null until the invitation is accepted.
      .addColumn("password_hash", "text")
      // SHA-256 of the single-use invitation token; null once accepted.
      .addColumn("invite_hash", "text", (c) => c.unique())
      .addColumn("invite_expires_at", "text")
      // Sealed with SECRET_ENCRYPTION_KEY; set at enrolment, asked at sign-in once totp_enabled is 1.
      .addColumn("totp_secret_encrypted", "text")
      .addColumn("totp_enabled", "integer", (c) => c.notNull())
      // JSON array of SHA-256 hashes of the unused recovery codes.
      .addColumn("recovery_hashes", "text")
      .addColumn("created_at", "text", (c) => c.notNull())
      .execute();
    await db.schema.createIndex("dashboard_users_merchant").on("dashboard_users").column("merchant_id").execute();

    await db.schema
      .createTable("dashboard_sessions")
      // SHA-256 of the 256-bit cookie token: the token itself is never stored.
      .addColumn("token_hash", "text", (c) => c.primaryKey())
      .addColumn("user_id", "text", (c) => c.notNull().references("dashboard_users.id"))
      .addColumn("csrf_token", "text", (c) => c.notNull())
      .addColumn("created_at", "text", (c) => c.notNull())
      .addColumn("last_seen_at", "text", (c) => c.notNull())
      .addColumn("step_up_at", "text")
      .execute();
    await db.schema.createIndex("dashboard_sessions_user").on("dashboard_sessions").column("user_id").execute();

    await db.schema
      .createTable("dashboard_signin_failures")
      .addColumn("id", "text", (c) => c.primaryKey())
      // `account:<email>` or `address:<ip>`.
      .addColumn("subject", "text", (c) => c.notNull())
      .addColumn("created_at", "text", (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex("dashboard_signin_failures_subject")
      .on("dashboard_signin_failures")
      .columns(["subject", "created_at"])
      .execute();

    await db.schema
      .createTable("dashboard_audit")
      // Time-ordered row id: the log pages by it, newest first.
      .addColumn("id", "text", (c) => c.primaryKey())
      .addColumn("merchant_id", "text", (c) => c.notNull().references("merchants.id"))
      .addColumn("user_id", "text")
      .addColumn("user_email", "text")
      .addColumn("action", "text", (c) => c.notNull())
      .addColumn("target", "text")
      .addColumn("address", "text")
      .addColumn("created_at", "text", (c) => c.notNull())
      .execute();
    await db.schema
      .createIndex("dashboard_audit_merchant")
      .on("dashboard_audit")
      .columns(["merchant_id", "id"])
      .execute();

    // Last use of an API key, shown in the dashboard; written at most once a minute per key.
    await db.schema.alterTable("api_keys").addColumn("last_used_at", "text").execute();
  },
};
