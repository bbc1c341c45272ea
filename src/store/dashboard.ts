// Repositories of the merchant's dashboard: users and invitations, sessions, sign-in failures, the audit log, API key listing.
import { randomBytes } from "node:crypto";
import type { Role } from "../domain/dashboardRoles.ts";
import { newRowId } from "../domain/ids.ts";
import { hashToken, type SecretBox } from "./secrets.ts";
import type { Tx } from "./store.ts";

export interface DashboardUser {
  id: string;
  merchantId: string;
  email: string;
  role: Role;
  passwordHash: string | null;
  inviteExpiresAt: string | null;
  totpSecretEncrypted: string | null;
  totpEnabled: boolean;
  recoveryHashes: string[];
  createdAt: string;
}

type UserRow = {
  id: string;
  merchant_id: string;
  email: string;
  role: string;
  password_hash: string | null;
  invite_expires_at: string | null;
  totp_secret_encrypted: string | null;
  totp_enabled: number;
  recovery_hashes: string | null;
  created_at: string;
};

function toUser(r: UserRow): DashboardUser {
  return {
    id: r.id,
    merchantId: r.merchant_id,
    email: r.email,
    role: r.role as Role,
    passwordHash: r.password_hash,
    inviteExpiresAt: r.invite_expires_at,
    totpSecretEncrypted: r.totp_secret_encrypted,
    totpEnabled: r.totp_enabled === 1,
    recoveryHashes: r.recovery_hashes === null ? [] : (JSON.parse(r.recovery_hashes) as string[]),
    createdAt: r.created_at,
  };
}

const USER_COLUMNS = [
  "id",
  "merchant_id",
  "email",
  "role",
  "password_hash",
  "invite_expires_at",
  "totp_secret_encrypted",
  "totp_enabled",
  "recovery_hashes",
  "created_at",
] as const;

export function totpSecretContext(userId: string): string {
  return `dashboard-totp:${userId}`;
}

/** A fresh 256-bit token in base64url: invitations and sessions. */
export function newDashboardToken(): string {
  return randomBytes(32).toString("base64url");
}

export async function dashboardEmailTaken(tx: Tx, email: string): Promise<boolean> {
  const row = await tx.db.selectFrom("dashboard_users").select("id").where("email", "=", email).executeTakeFirst();
  return row !== undefined;
}

/** A user invited with a single-use token (returned, stored only as its hash). */
export async function inviteUser(
  tx: Tx,
  merchantId: string,
  email: string,
  role: Role,
  expiresAt: string,
  now: string,
): Promise<{ userId: string; token: string }> {
  const id = newRowId();
  const token = newDashboardToken();
  await tx.db
    .insertInto("dashboard_users")
    .values({
      id,
      merchant_id: merchantId,
      email,
      role,
      password_hash: null,
      invite_hash: hashToken(token),
      invite_expires_at: expiresAt,
      totp_secret_encrypted: null,
      totp_enabled: 0,
      recovery_hashes: null,
      created_at: now,
    })
    .execute();
  return { userId: id, token };
}

export async function findUserByInvitation(tx: Tx, token: string): Promise<DashboardUser | null> {
  const r = await tx.db
    .selectFrom("dashboard_users")
    .select(USER_COLUMNS)
    .where("invite_hash", "=", hashToken(token))
    .executeTakeFirst();
  return r ? toUser(r) : null;
}

/** Accepting spends the invitation: the hash is cleared in the same statement that sets the password. */
export async function acceptInvitation(tx: Tx, userId: string, passwordHash: string): Promise<boolean> {
  const result = await tx.db
    .updateTable("dashboard_users")
    .set({ password_hash: passwordHash, invite_hash: null, invite_expires_at: null })
    .where("id", "=", userId)
    .where("invite_hash", "is not", null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function findUser(tx: Tx, id: string): Promise<DashboardUser | null> {
  const r = await tx.db.selectFrom("dashboard_users").select(USER_COLUMNS).where("id", "=", id).executeTakeFirst();
  return r ? toUser(r) : null;
}

export async function findUserByEmail(tx: Tx, email: string): Promise<DashboardUser | null> {
  const r = await tx.db
    .selectFrom("dashboard_users")
    .select(USER_COLUMNS)
    .where("email", "=", email)
    .executeTakeFirst();
  return r ? toUser(r) : null;
}

/** A merchant's users; a merchant has a team, not a crowd, but the list is bounded all the same. */
export async function listUsers(tx: Tx, merchantId: string): Promise<DashboardUser[]> {
  const rows = await tx.db
    .selectFrom("dashboard_users")
    .select(USER_COLUMNS)
    .where("merchant_id", "=", merchantId)
    .orderBy("id")
    .limit(1000)
    .execute();
  return rows.map(toUser);
}

export async function countOwners(tx: Tx, merchantId: string): Promise<number> {
  const row = await tx.db
    .selectFrom("dashboard_users")
    .select((eb) => eb.fn.countAll<string | number>().as("n"))
    .where("merchant_id", "=", merchantId)
    .where("role", "=", "owner")
    .where("password_hash", "is not", null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function setRole(tx: Tx, userId: string, role: Role): Promise<void> {
  await tx.db.updateTable("dashboard_users").set({ role }).where("id", "=", userId).execute();
}

export async function setPassword(tx: Tx, userId: string, passwordHash: string): Promise<void> {
  await tx.db.updateTable("dashboard_users").set({ password_hash: passwordHash }).where("id", "=", userId).execute();
}

/** Removing a user ends its sessions first; its audit lines stay (they name the user by id and address). */
export async function deleteUser(tx: Tx, userId: string): Promise<void> {
  await tx.db.deleteFrom("dashboard_sessions").where("user_id", "=", userId).execute();
  await tx.db.deleteFrom("dashboard_totp_steps").where("user_id", "=", userId).execute();
  await tx.db.deleteFrom("dashboard_users").where("id", "=", userId).execute();
}

export async function setPendingTotp(tx: Tx, box: SecretBox, userId: string, secret: string): Promise<void> {
  await tx.db
    .updateTable("dashboard_users")
    .set({ totp_secret_encrypted: box.seal(secret, totpSecretContext(userId)), totp_enabled: 0, recovery_hashes: null })
    .where("id", "=", userId)
    .execute();
}

export async function enableTotp(tx: Tx, userId: string, recoveryHashes: string[]): Promise<void> {
  await tx.db
    .updateTable("dashboard_users")
    .set({ totp_enabled: 1, recovery_hashes: JSON.stringify(recoveryHashes) })
    .where("id", "=", userId)
    .execute();
}

export async function disableTotp(tx: Tx, userId: string): Promise<void> {
  await tx.db
    .updateTable("dashboard_users")
    .set({ totp_enabled: 0, totp_secret_encrypted: null, recovery_hashes: null })
    .where("id", "=", userId)
    .execute();
}

/**
 * Spends one recovery code: removes its hash if it is still unused, under the user's row lock (on
 * SQLite the write lock), so two parallel uses of one code cannot both succeed. Answers how many
 * codes are left, or null when the code was not (or no longer) there.
 */
export async function spendRecoveryCode(tx: Tx, userId: string, hash: string): Promise<number | null> {
  const row = await tx.db
    .selectFrom("dashboard_users")
    .select(["recovery_hashes", "totp_enabled"])
    .where("id", "=", userId)
    .$if(tx.dialect === "postgres", (qb) => qb.forUpdate())
    .executeTakeFirst();
  if (row?.totp_enabled !== 1 || row.recovery_hashes === null) return null;
  const hashes = JSON.parse(row.recovery_hashes) as string[];
  if (!hashes.includes(hash)) return null;
  const left = hashes.filter((h) => h !== hash);
  await tx.db
    .updateTable("dashboard_users")
    .set({ recovery_hashes: JSON.stringify(left) })
    .where("id", "=", userId)
    .execute();
  return left.length;
}

/**
 * Accepts a TOTP time step once (RFC 6238 §5.2): true only when it is later than every step
 * accepted before for this user. One conditional upsert, so parallel uses of a code get one true.
 */
export async function acceptTotpStep(tx: Tx, userId: string, step: number): Promise<boolean> {
  const row = await tx.db
    .insertInto("dashboard_totp_steps")
    .values({ user_id: userId, last_step: step })
    .onConflict((oc) =>
      oc.column("user_id").doUpdateSet({ last_step: step }).where("dashboard_totp_steps.last_step", "<", step),
    )
    .returning("user_id")
    .executeTakeFirst();
  return row !== undefined;
}

/** Failed sign-ins for an email without an account: the client address alone. */
export async function recordUnattributedSigninFailure(tx: Tx, address: string, now: string): Promise<void> {
  await tx.db.insertInto("signin_failures_unattributed").values({ id: newRowId(), address, created_at: now }).execute();
}

/** Newest first, keyset-paged by the time-ordered id. */
export async function listUnattributedSigninFailures(
  tx: Tx,
  before: string | undefined,
  limit: number,
): Promise<{ id: string; address: string; createdAt: string }[]> {
  let query = tx.db.selectFrom("signin_failures_unattributed").selectAll();
  if (before !== undefined) query = query.where("id", "<", before);
  const rows = await query.orderBy("id", "desc").limit(limit).execute();
  return rows.map((r) => ({ id: r.id, address: r.address, createdAt: r.created_at }));
}

/** Deletes at most `limit` of the unattributed failures older than `before` (they are kept 30 days). */
export async function pruneUnattributedSigninFailures(tx: Tx, before: string, limit: number): Promise<void> {
  const old = tx.db
    .selectFrom("signin_failures_unattributed")
    .select("id")
    .where("created_at", "<", before)
    .limit(limit);
  await tx.db.deleteFrom("signin_failures_unattributed").where("id", "in", old).execute();
}

export interface DashboardSession {
  tokenHash: string;
  userId: string;
  csrfToken: string;
  createdAt: string;
  lastSeenAt: string;
  stepUpAt: string | null;
}

export async function createSession(
  tx: Tx,
  userId: string,
  now: string,
  stepUp: boolean,
): Promise<{ token: string; csrfToken: string }> {
  const token = newDashboardToken();
  const csrfToken = newDashboardToken();
  await tx.db
    .insertInto("dashboard_sessions")
    .values({
      token_hash: hashToken(token),
      user_id: userId,
      csrf_token: csrfToken,
      created_at: now,
      last_seen_at: now,
      step_up_at: stepUp ? now : null,
    })
    .execute();
  return { token, csrfToken };
}

export async function findSession(tx: Tx, token: string): Promise<DashboardSession | null> {
  const r = await tx.db
    .selectFrom("dashboard_sessions")
    .selectAll()
    .where("token_hash", "=", hashToken(token))
    .executeTakeFirst();
  return r
    ? {
        tokenHash: r.token_hash,
        userId: r.user_id,
        csrfToken: r.csrf_token,
        createdAt: r.created_at,
        lastSeenAt: r.last_seen_at,
        stepUpAt: r.step_up_at,
      }
    : null;
}

export async function touchSession(tx: Tx, tokenHash: string, now: string): Promise<void> {
  await tx.db
    .updateTable("dashboard_sessions")
    .set({ last_seen_at: now })
    .where("token_hash", "=", tokenHash)
    .execute();
}

export async function markStepUp(tx: Tx, tokenHash: string, now: string): Promise<void> {
  await tx.db.updateTable("dashboard_sessions").set({ step_up_at: now }).where("token_hash", "=", tokenHash).execute();
}

export async function deleteSession(tx: Tx, tokenHash: string): Promise<void> {
  await tx.db.deleteFrom("dashboard_sessions").where("token_hash", "=", tokenHash).execute();
}

/** Ends every session of a user but, optionally, one (a password change keeps the session that made it). */
export async function deleteSessionsOf(tx: Tx, userId: string, except?: string): Promise<void> {
  let query = tx.db.deleteFrom("dashboard_sessions").where("user_id", "=", userId);
  if (except !== undefined) query = query.where("token_hash", "<>", except);
  await query.execute();
}

export interface AuditEntry {
  id: string;
  userId: string | null;
  userEmail: string | null;
  action: string;
  target: string | null;
  address: string | null;
  createdAt: string;
}

export async function audit(
  tx: Tx,
  entry: {
    merchantId: string;
    userId: string | null;
    userEmail: string | null;
    action: string;
    target: string | null;
    address: string | null;
  },
  now: string,
): Promise<void> {
  await tx.db
    .insertInto("dashboard_audit")
    .values({
      id: newRowId(),
      merchant_id: entry.merchantId,
      user_id: entry.userId,
      user_email: entry.userEmail,
      action: entry.action,
      target: entry.target,
      address: entry.address,
      created_at: now,
    })
    .execute();
}

/** Newest first, keyset-paged by the time-ordered id. */
export async function listAudit(
  tx: Tx,
  merchantId: string,
  before: string | undefined,
  limit: number,
): Promise<AuditEntry[]> {
  let query = tx.db.selectFrom("dashboard_audit").selectAll().where("merchant_id", "=", merchantId);
  if (before !== undefined) query = query.where("id", "<", before);
  const rows = await query.orderBy("id", "desc").limit(limit).execute();
  return rows.map((r) => ({
    id: r.id,
    userId: r.user_id,
    userEmail: r.user_email,
    action: r.action,
    target: r.target,
    address: r.address,
    createdAt: r.created_at,
  }));
}
