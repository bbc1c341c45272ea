// Repositories of the merchant's dashboard: users and invitations, sessions, sign-in failures, the audit log, API key listing.
import { randomBytes } from "node:crypto";
import type { Role } from "../domain/dashboardRoles.ts";
import { newRowId } from "../domain/ids.ts";
import { hashToken, type SecretBox } from "./secrets.ts";
import type { Tx } from "./store.ts";

/**
 * A login (id, email, password, TOTP) in one of its memberships (merchantId, role): a login may
 * belong to several merchants (product §18). Read from the login alone, the membership fields are
 * those of the merchant the login was first invited to.
 */
export interface DashboardUser {
  /** The login's id: sessions, TOTP and the password belong to it. */
  id: string;
  /** The membership's id: the team member's id in its merchant's team. */
  membershipId: string;
  /** False while the membership's invitation is pending. */
  accepted: boolean;
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
    membershipId: r.id,
    accepted: r.password_hash !== null,
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

type MemberRow = UserRow & { membership_id: string; accepted_at: string | null };

/** The login joined with one membership: merchant, role and invitation come from the membership. */
function toMember(r: MemberRow): DashboardUser {
  return { ...toUser(r), membershipId: r.membership_id, accepted: r.accepted_at !== null };
}

function membersQuery(tx: Tx) {
  return tx.db
    .selectFrom("dashboard_memberships as m")
    .innerJoin("dashboard_users as u", "u.id", "m.user_id")
    .select([
      "u.id",
      "m.merchant_id",
      "u.email",
      "m.role",
      "u.password_hash",
      "m.invite_expires_at",
      "u.totp_secret_encrypted",
      "u.totp_enabled",
      "u.recovery_hashes",
      "m.created_at",
      "m.id as membership_id",
      "m.accepted_at",
    ]);
}

export type InviteOutcome = { ok: true; userId: string; token: string } | { ok: false; error: "already_member" };

/**
 * Invites an email into a merchant: a single-use token (returned, stored only as its hash) on a
 * pending membership. The same statements run whether the email is unknown, only invited, or a
 * login of another merchant, so neither the answer nor its timing tells them apart (product §18):
 * the login is inserted unless one exists, and the membership is inserted, or its pending
 * invitation renewed. Only an accepted membership of this very merchant (on its team list
 * already) is refused.
 */
export async function inviteUser(
  tx: Tx,
  merchantId: string,
  email: string,
  role: Role,
  expiresAt: string,
  now: string,
): Promise<InviteOutcome> {
  const newId = newRowId();
  const token = newDashboardToken();
  await tx.db
    .insertInto("dashboard_users")
    .values({
      id: newId,
      merchant_id: merchantId,
      email,
      role,
      password_hash: null,
      invite_hash: null,
      invite_expires_at: null,
      totp_secret_encrypted: null,
      totp_enabled: 0,
      recovery_hashes: null,
      created_at: now,
    })
    .onConflict((oc) => oc.column("email").doNothing())
    .execute();
  const login = await tx.db
    .selectFrom("dashboard_users")
    .select("id")
    .where("email", "=", email)
    .executeTakeFirstOrThrow();
  // A new login's first membership shares its id, as every user migrated by 021 does.
  const membershipId = login.id === newId ? newId : newRowId();
  const invitation = { invite_hash: hashToken(token), invite_expires_at: expiresAt, role };
  const row = await tx.db
    .insertInto("dashboard_memberships")
    .values({
      id: membershipId,
      user_id: login.id,
      merchant_id: merchantId,
      accepted_at: null,
      created_at: now,
      ...invitation,
    })
    .onConflict((oc) =>
      oc
        .columns(["user_id", "merchant_id"])
        .doUpdateSet(invitation)
        .where("dashboard_memberships.accepted_at", "is", null),
    )
    .returning("id")
    .executeTakeFirst();
  if (!row) return { ok: false, error: "already_member" };
  return { ok: true, userId: row.id, token };
}

/** The pending membership an invitation token opens, with its login. */
export async function findUserByInvitation(tx: Tx, token: string): Promise<DashboardUser | null> {
  const r = await membersQuery(tx).where("m.invite_hash", "=", hashToken(token)).executeTakeFirst();
  return r ? toMember(r) : null;
}

/**
 * Accepting spends the invitation: the hash is cleared in the statement that accepts the
 * membership. A new login's password is set with it (`passwordHash`); an existing login keeps its own.
 */
export async function acceptInvitation(
  tx: Tx,
  member: Pick<DashboardUser, "id" | "membershipId">,
  passwordHash: string | null,
  now: string,
): Promise<boolean> {
  const result = await tx.db
    .updateTable("dashboard_memberships")
    .set({ invite_hash: null, invite_expires_at: null, accepted_at: now })
    .where("id", "=", member.membershipId)
    .where("invite_hash", "is not", null)
    .executeTakeFirst();
  if (result.numUpdatedRows === 0n) return false;
  if (passwordHash === null) return true;
  const login = await tx.db
    .updateTable("dashboard_users")
    .set({ password_hash: passwordHash })
    .where("id", "=", member.id)
    .where("password_hash", "is", null)
    .executeTakeFirst();
  return login.numUpdatedRows > 0n;
}

/** A membership by its id, with its login. */
export async function findMember(tx: Tx, membershipId: string): Promise<DashboardUser | null> {
  const r = await membersQuery(tx).where("m.id", "=", membershipId).executeTakeFirst();
  return r ? toMember(r) : null;
}

/** A login's accepted membership of one merchant (a session's), or, without a merchant, its oldest one. */
export async function findActiveMember(
  tx: Tx,
  userId: string,
  merchantId: string | null,
): Promise<DashboardUser | null> {
  let query = membersQuery(tx).where("m.user_id", "=", userId).where("m.accepted_at", "is not", null);
  if (merchantId !== null) query = query.where("m.merchant_id", "=", merchantId);
  const r = await query.orderBy("m.created_at").orderBy("m.id").limit(1).executeTakeFirst();
  return r ? toMember(r) : null;
}

/** The merchants a login belongs to (accepted memberships), for the account switcher; bounded. */
export async function loginMerchants(
  tx: Tx,
  userId: string,
): Promise<{ id: string; name: string | null; role: string }[]> {
  const rows = await tx.db
    .selectFrom("dashboard_memberships as m")
    .innerJoin("merchants", "merchants.id", "m.merchant_id")
    .select(["merchants.id", "merchants.merchant_name", "m.role"])
    .where("m.user_id", "=", userId)
    .where("m.accepted_at", "is not", null)
    .orderBy("m.created_at")
    .orderBy("m.id")
    .limit(100)
    .execute();
  return rows.map((r) => ({ id: r.id, name: r.merchant_name, role: r.role }));
}

/** Moves a session to another of its login's merchants; a step-up does not carry over. */
export async function setSessionMerchant(tx: Tx, tokenHash: string, merchantId: string): Promise<void> {
  await tx.db
    .updateTable("dashboard_sessions")
    .set({ merchant_id: merchantId, step_up_at: null })
    .where("token_hash", "=", tokenHash)
    .execute();
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

/** A merchant's team (its memberships); a team, not a crowd, but the list is bounded all the same. */
export async function listUsers(tx: Tx, merchantId: string): Promise<DashboardUser[]> {
  const rows = await membersQuery(tx).where("m.merchant_id", "=", merchantId).orderBy("m.id").limit(1000).execute();
  return rows.map(toMember);
}

export async function countOwners(tx: Tx, merchantId: string): Promise<number> {
  const row = await tx.db
    .selectFrom("dashboard_memberships")
    .select((eb) => eb.fn.countAll<string | number>().as("n"))
    .where("merchant_id", "=", merchantId)
    .where("role", "=", "owner")
    .where("accepted_at", "is not", null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function setRole(tx: Tx, membershipId: string, role: Role): Promise<void> {
  await tx.db.updateTable("dashboard_memberships").set({ role }).where("id", "=", membershipId).execute();
}

export async function setPassword(tx: Tx, userId: string, passwordHash: string): Promise<void> {
  await tx.db.updateTable("dashboard_users").set({ password_hash: passwordHash }).where("id", "=", userId).execute();
}

/**
 * Removing a team member ends the membership and the login's sessions in that merchant; a login
 * left without any membership is removed with its sessions. Audit lines stay (they name the user
 * by id and address).
 */
export async function deleteUser(
  tx: Tx,
  member: Pick<DashboardUser, "id" | "membershipId" | "merchantId">,
): Promise<void> {
  await tx.db
    .deleteFrom("dashboard_sessions")
    .where("user_id", "=", member.id)
    .where("merchant_id", "=", member.merchantId)
    .execute();
  await tx.db.deleteFrom("dashboard_memberships").where("id", "=", member.membershipId).execute();
  const left = await tx.db
    .selectFrom("dashboard_memberships")
    .select("id")
    .where("user_id", "=", member.id)
    .limit(1)
    .executeTakeFirst();
  if (left) return;
  await tx.db.deleteFrom("dashboard_sessions").where("user_id", "=", member.id).execute();
  await tx.db.deleteFrom("dashboard_totp_steps").where("user_id", "=", member.id).execute();
  await tx.db.deleteFrom("dashboard_users").where("id", "=", member.id).execute();
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
  /** The merchant the session works in; null only for a session older than migration 021 without a user. */
  merchantId: string | null;
}

export async function createSession(
  tx: Tx,
  userId: string,
  now: string,
  stepUp: boolean,
  merchantId: string,
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
      merchant_id: merchantId,
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
        merchantId: r.merchant_id,
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
