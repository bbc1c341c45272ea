// Migration 021 on a store that already holds dashboard users and sessions: each user becomes one membership under its own id, sessions keep their merchant.
import type { Kysely } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { seedCatalog } from "../../src/store/currencies.ts";
import { findActiveMember, findUserByInvitation, listUsers, loginMerchants } from "../../src/store/dashboard.ts";
import type { Database } from "../../src/store/schema.ts";
import { hashToken } from "../../src/store/secrets.ts";
import type { Tx } from "../../src/store/store.ts";
import {
  CATALOG_BEFORE_043,
  type MigrationDatabase,
  oldMerchantRow,
  openMigrationDatabase,
} from "../support/migrationDatabase.ts";
import { storeKind } from "../support/server.ts";

const dialect = storeKind();
let bare: MigrationDatabase;
let db: Kysely<Database>;

const migrateTo = (target: string | null) => bare.migrateTo(target);

const T0 = "2026-01-01T00:00:00.000Z";

function user(id: string, email: string, passwordHash: string | null, inviteToken: string | null) {
  return {
    id,
    merchant_id: "m1",
    email,
    role: passwordHash ? "owner" : "viewer",
    password_hash: passwordHash,
    invite_hash: inviteToken ? hashToken(inviteToken) : null,
    invite_expires_at: inviteToken ? "2030-01-01T00:00:00.000Z" : null,
    totp_secret_encrypted: null,
    totp_enabled: 0,
    recovery_hashes: null,
    created_at: T0,
  };
}

beforeAll(async () => {
  bare = await openMigrationDatabase({ foreignKeys: true });
  db = bare.db;
  await migrateTo("019_api_key_use_notices");
  await seedCatalog({ db, dialect }, CATALOG_BEFORE_043);
  await db
    .insertInto("merchants")
    .values({ ...oldMerchantRow("m1", "upgrade@example.com", T0), merchant_name: "Upgraded" } as never)
    .execute();
  await db
    .insertInto("dashboard_users")
    .values([user("u1", "active@example.com", "$argon2id$x", null), user("u2", "pending@example.com", null, "tok-2")])
    .execute();
  await db
    .insertInto("dashboard_sessions")
    .values({
      token_hash: "h1",
      user_id: "u1",
      csrf_token: "c",
      created_at: T0,
      last_seen_at: T0,
      step_up_at: null,
    } as never)
    .execute();
  await migrateTo(null);
});

afterAll(async () => {
  await bare?.close();
});

it("turns every user into one membership with the same id, keeps invitations and sessions working", async () => {
  const tx: Tx = { db, dialect };
  const team = await listUsers(tx, "m1");
  expect(team.map((u) => [u.id, u.membershipId, u.email, u.role, u.accepted])).toEqual([
    ["u1", "u1", "active@example.com", "owner", true],
    ["u2", "u2", "pending@example.com", "viewer", false],
  ]);
  const pending = await findUserByInvitation(tx, "tok-2");
  expect(pending).toMatchObject({ id: "u2", membershipId: "u2", merchantId: "m1", accepted: false });
  expect(await findActiveMember(tx, "u1", "m1")).toMatchObject({ id: "u1", role: "owner" });
  expect(await findActiveMember(tx, "u2", null)).toBeNull();
  expect(await loginMerchants(tx, "u1")).toEqual([{ id: "m1", name: "Upgraded", role: "owner" }]);
  const session = await db.selectFrom("dashboard_sessions").selectAll().executeTakeFirstOrThrow();
  expect(session.merchant_id).toBe("m1");
  const login = await db
    .selectFrom("dashboard_users")
    .select("invite_hash")
    .where("id", "=", "u2")
    .executeTakeFirstOrThrow();
  expect(login.invite_hash).toBeNull();
});
