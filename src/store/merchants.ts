// Merchant repository: merchants, their API keys (hashed), secrets (sealed) and withdrawal methods.

import { type Selectable, sql } from "kysely";
import { type AddressRange, parseRange } from "../domain/addressRanges.ts";
import { type ApiKeyScope, isApiKeyScope } from "../domain/apiKeyScopes.ts";
import type { FeesPaidBy } from "../domain/fees.ts";
import { newRowId } from "../domain/ids.ts";
import { placeholder, preparedQuery } from "./prepared.ts";
import { readThrough } from "./readCache.ts";
import type { MerchantsTable, WithdrawalMethodsTable } from "./schema.ts";
import { hashToken, newApiKey, newCallbackSecret, newSecretKey, type SecretBox } from "./secrets.ts";
import type { Tx } from "./store.ts";

export type MerchantStatus = "active" | "suspended";

export interface Merchant {
  id: string;
  email: string;
  merchantName: string | null;
  directorName: string | null;
  website: string | null;
  logo: string | null;
  whitelabeling: boolean;
  status: MerchantStatus;
  /** Plain decimal string, 0 to 100. */
  feePercent: string;
  feesPaidBy: FeesPaidBy;
  /** Where withdrawal and refund events are delivered; null: nowhere (they are still listed). */
  defaultCallbackUrl: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface MerchantProfile {
  email: string;
  merchantName: string | null;
  directorName: string | null;
  website: string | null;
  logo: string | null;
  whitelabeling: boolean;
  feePercent: string;
  feesPaidBy: FeesPaidBy;
}

function fromRow(r: MerchantsTable): Merchant {
  return {
    id: r.id,
    email: r.email,
    merchantName: r.merchant_name,
    directorName: r.director_name,
    website: r.website,
    logo: r.logo,
    whitelabeling: r.whitelabeling === 1,
    status: r.status as MerchantStatus,
    feePercent: r.fee_percent,
    feesPaidBy: r.fees_paid_by as FeesPaidBy,
    defaultCallbackUrl: r.default_callback_url ?? null,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

function callbackSecretContext(merchantId: string): string {
  return `merchant-callback-secret:${merchantId}`;
}

function apiSecretContext(apiKeyId: string): string {
  return `api-key-secret:${apiKeyId}`;
}

export async function emailTaken(tx: Tx, email: string, exceptId?: string): Promise<boolean> {
  const found = await tx.db
    .selectFrom("merchants")
    .select("id")
    // The expression of the unique index merchants_email_lower (migration 007), so that index answers.
    .where(sql`lower(email)`, "=", sql`lower(${email})`)
    .$if(exceptId !== undefined, (qb) => qb.where("id", "!=", exceptId as string))
    .executeTakeFirst();
  return found !== undefined;
}

export async function insertMerchant(tx: Tx, box: SecretBox, profile: MerchantProfile, now: string): Promise<Merchant> {
  const id = newRowId();
  const row: MerchantsTable = {
    id,
    email: profile.email,
    merchant_name: profile.merchantName,
    director_name: profile.directorName,
    website: profile.website,
    logo: profile.logo,
    whitelabeling: profile.whitelabeling ? 1 : 0,
    status: "active",
    fee_percent: profile.feePercent,
    fees_paid_by: profile.feesPaidBy,
    callback_secret: box.seal(newCallbackSecret(), callbackSecretContext(id)),
    callback_secret_previous: null,
    callback_secret_rotated_at: null,
    default_callback_url: null,
    created_at: now,
    updated_at: now,
  };
  await tx.db.insertInto("merchants").values(row).execute();
  return fromRow(row);
}

const merchantQuery = preparedQuery(["id"] as const, (db, args) =>
  db.selectFrom("merchants").selectAll().where("id", "=", args.id),
);

export async function findMerchant(tx: Tx, id: string): Promise<Merchant | null> {
  return readThrough(tx, "merchants", id, async () => {
    const [r] = await merchantQuery(tx, { id });
    return r ? fromRow(r) : null;
  });
}

export async function updateMerchant(
  tx: Tx,
  id: string,
  changes: Partial<MerchantProfile & { status: MerchantStatus }>,
  now: string,
): Promise<Merchant | null> {
  const set: Partial<MerchantsTable> = { updated_at: now };
  if (changes.email !== undefined) set.email = changes.email;
  if (changes.merchantName !== undefined) set.merchant_name = changes.merchantName;
  if (changes.directorName !== undefined) set.director_name = changes.directorName;
  if (changes.website !== undefined) set.website = changes.website;
  if (changes.logo !== undefined) set.logo = changes.logo;
  if (changes.whitelabeling !== undefined) set.whitelabeling = changes.whitelabeling ? 1 : 0;
  if (changes.feePercent !== undefined) set.fee_percent = changes.feePercent;
  if (changes.feesPaidBy !== undefined) set.fees_paid_by = changes.feesPaidBy;
  if (changes.status !== undefined) set.status = changes.status;
  const result = await tx.db.updateTable("merchants").set(set).where("id", "=", id).executeTakeFirst();
  if (result.numUpdatedRows === 0n) return null;
  return findMerchant(tx, id);
}

/**
 * Sets (or, with null, clears) the merchant's default callback URL, where its withdrawal and refund
 * events are delivered. The caller has checked the URL (`requireAllowedCallbackUrl` in
 * src/app/callbackUrlInput.ts, the rules of an invoice's callbackUrl). Answers false for an
 * unknown merchant. Events recorded before the change keep the URL they were recorded with.
 */
export async function setDefaultCallbackUrl(
  tx: Tx,
  merchantId: string,
  url: string | null,
  now: string,
): Promise<boolean> {
  const result = await tx.db
    .updateTable("merchants")
    .set({ default_callback_url: url, updated_at: now })
    .where("id", "=", merchantId)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** The merchant's default callback URL: undefined for an unknown merchant, null when none is set. */
export async function findDefaultCallbackUrl(tx: Tx, merchantId: string): Promise<string | null | undefined> {
  const merchant = await findMerchant(tx, merchantId);
  return merchant ? merchant.defaultCallbackUrl : undefined;
}

export interface CallbackSecrets {
  current: string;
  /** The secret before the last rotation, still signed with until `previousValidUntil`. */
  previous: string | null;
  rotatedAt: string | null;
}

/**
 * Whether this box opens the secrets of this store: tries one sealed secret (the oldest merchant's
 * callback secret). True on a store that has none yet.
 */
export async function boxOpensStoredSecrets(tx: Tx, box: SecretBox): Promise<boolean> {
  const r = await tx.db
    .selectFrom("merchants")
    .select(["id", "callback_secret"])
    .orderBy("created_at")
    .orderBy("id")
    .limit(1)
    .executeTakeFirst();
  if (!r) return true;
  try {
    box.open(r.callback_secret, callbackSecretContext(r.id));
    return true;
  } catch {
    return false;
  }
}

export async function readCallbackSecrets(tx: Tx, box: SecretBox, merchantId: string): Promise<CallbackSecrets | null> {
  const r = await tx.db
    .selectFrom("merchants")
    .select(["callback_secret", "callback_secret_previous", "callback_secret_rotated_at"])
    .where("id", "=", merchantId)
    .executeTakeFirst();
  if (!r) return null;
  const context = callbackSecretContext(merchantId);
  return {
    current: box.open(r.callback_secret, context),
    previous: r.callback_secret_previous ? box.open(r.callback_secret_previous, context) : null,
    rotatedAt: r.callback_secret_rotated_at,
  };
}

export async function rotateCallbackSecret(
  tx: Tx,
  box: SecretBox,
  merchantId: string,
  now: string,
): Promise<string | null> {
  const r = await tx.db
    .selectFrom("merchants")
    .select("callback_secret")
    .where("id", "=", merchantId)
    .$if(tx.dialect === "postgres", (qb) => qb.forUpdate())
    .executeTakeFirst();
  if (!r) return null;
  const secret = newCallbackSecret();
  await tx.db
    .updateTable("merchants")
    .set({
      callback_secret: box.seal(secret, callbackSecretContext(merchantId)),
      callback_secret_previous: r.callback_secret,
      callback_secret_rotated_at: now,
      updated_at: now,
    })
    .where("id", "=", merchantId)
    .execute();
  return secret;
}

export interface IssuedApiKey {
  apiKey: string;
  secretKey: string | null;
}

/** Issues a key; the plain key and secret exist only in the return value, never in the store. */
/** What a scoped key may do and from where (product §31); null for either: no bound (a full key). */
export interface ApiKeyLimits {
  scopes: readonly ApiKeyScope[] | null;
  /** CIDR ranges, already checked (parseRange). */
  allowedAddresses: readonly string[] | null;
}

export const FULL_KEY: ApiKeyLimits = { scopes: null, allowedAddresses: null };

export async function issueApiKey(
  tx: Tx,
  box: SecretBox,
  merchantId: string,
  legacy: boolean,
  now: string,
  limits: ApiKeyLimits = FULL_KEY,
): Promise<IssuedApiKey> {
  const id = newRowId();
  const apiKey = newApiKey();
  const secretKey = legacy ? null : newSecretKey();
  await tx.db
    .insertInto("api_keys")
    .values({
      id,
      merchant_id: merchantId,
      key_hash: hashToken(apiKey),
      key_prefix: apiKey.slice(0, 10),
      secret_encrypted: secretKey === null ? null : box.seal(secretKey, apiSecretContext(id)),
      legacy: legacy ? 1 : 0,
      created_at: now,
      revoked_at: null,
      scopes: limits.scopes === null ? null : JSON.stringify(limits.scopes),
      allowed_addresses: limits.allowedAddresses === null ? null : JSON.stringify(limits.allowedAddresses),
    })
    .execute();
  return { apiKey, secretKey };
}

export async function revokeApiKey(tx: Tx, apiKey: string, now: string): Promise<boolean> {
  const result = await tx.db
    .updateTable("api_keys")
    .set({ revoked_at: now })
    .where("key_hash", "=", hashToken(apiKey))
    .where("revoked_at", "is", null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export interface ApiKeyOwner {
  apiKeyId: string;
  merchantId: string;
  legacy: boolean;
  /** Sealed secret; opened only by the signature check that needs it. */
  secretEncrypted: string | null;
  /** The key's scopes; null: a full key. */
  scopes: readonly ApiKeyScope[] | null;
  /** The client address ranges it may be used from, parsed once per lookup; null: anywhere. */
  allowedRanges: readonly AddressRange[] | null;
}

/** Finds the live (not revoked) key with this value. Lookup is by hash, so timing reveals nothing of stored keys. */
const apiKeyQuery = preparedQuery(["keyHash"] as const, (db, args) =>
  db
    .selectFrom("api_keys")
    .select(["id", "merchant_id", "legacy", "secret_encrypted", "scopes", "allowed_addresses"])
    .where("key_hash", "=", args.keyHash)
    .where("revoked_at", "is", null),
);

export async function findApiKey(tx: Tx, apiKey: string): Promise<ApiKeyOwner | null> {
  return findApiKeyByHash(tx, hashToken(apiKey));
}

/**
 * The owner of an API key when the read cache holds it (SQLite), else a promise of the lookup:
 * authentication runs on every request, and a cached key then costs neither a promise nor a tick.
 */
export function apiKeyOwner(tx: Tx, apiKey: string): ApiKeyOwner | Promise<ApiKeyOwner | null> {
  const keyHash = hashToken(apiKey);
  return tx.cache?.get<ApiKeyOwner>("api_keys", keyHash) ?? findApiKeyByHash(tx, keyHash);
}

async function findApiKeyByHash(tx: Tx, keyHash: string): Promise<ApiKeyOwner | null> {
  return readThrough(tx, "api_keys", keyHash, async () => {
    const [r] = await apiKeyQuery(tx, { keyHash });
    if (!r) return null;
    return {
      apiKeyId: r.id,
      merchantId: r.merchant_id,
      legacy: r.legacy === 1,
      secretEncrypted: r.secret_encrypted,
      scopes: storedScopes(r.scopes),
      allowedRanges: storedRanges(r.allowed_addresses),
    };
  });
}

/** Stored scopes (checked when the key was made); an unknown one, from a later version, grants nothing. */
function storedScopes(text: string | null | undefined): ApiKeyScope[] | null {
  if (text === null || text === undefined) return null;
  return (JSON.parse(text) as string[]).filter(isApiKeyScope);
}

/** Stored ranges (checked when the key was made); one that no longer parses admits no one. */
function storedRanges(text: string | null | undefined): AddressRange[] | null {
  if (text === null || text === undefined) return null;
  return (JSON.parse(text) as string[]).flatMap((range) => {
    const parsed = parseRange(range);
    return parsed.ok ? [parsed.value] : [];
  });
}

/** Bounds of the opened-secret cache: how many keys, and how long a plain secret stays in memory. */
export const OPENED_SECRET_CACHE_SIZE = 1000;
export const OPENED_SECRET_TTL_MS = 60_000;

/**
 * Opened secrets by key id and sealed envelope: AES-GCM opening showed up in every signed request's
 * profile. The owner passed in was just read from the store (findApiKey excludes revoked keys), so
 * a revoked key is refused before its cached secret could be used, and a reissued secret has a new
 * envelope and so a new entry; the TTL only bounds how long a plain secret stays in memory.
 */
const openedByBox = new WeakMap<SecretBox, Map<string, { secret: string; expiresAt: number }>>();

export function openApiSecret(box: SecretBox, owner: ApiKeyOwner): string | null {
  if (owner.secretEncrypted === null) return null;
  // Per box: only the key that sealed a secret may open it.
  let openedSecrets = openedByBox.get(box);
  if (!openedSecrets) {
    openedSecrets = new Map();
    openedByBox.set(box, openedSecrets);
  }
  const cacheKey = `${owner.apiKeyId}\u0000${owner.secretEncrypted}`;
  const now = Date.now();
  const cached = openedSecrets.get(cacheKey);
  if (cached && cached.expiresAt > now) return cached.secret;
  const secret = box.open(owner.secretEncrypted, apiSecretContext(owner.apiKeyId));
  openedSecrets.delete(cacheKey);
  if (openedSecrets.size >= OPENED_SECRET_CACHE_SIZE) {
    // Insertion order: the first key is the oldest entry.
    const oldest = openedSecrets.keys().next().value;
    if (oldest !== undefined) openedSecrets.delete(oldest);
  }
  openedSecrets.set(cacheKey, { secret, expiresAt: now + OPENED_SECRET_TTL_MS });
  return secret;
}

export type WithdrawalMethodOrigin = "operator" | "dashboard";

export interface WithdrawalMethod {
  id: number;
  merchantId: string;
  currency: string;
  address: string;
  label: string | null;
  createdAt: string;
  /** When it was disabled; a disabled method takes no new withdrawal. */
  disabledAt: string | null;
  /** When it starts taking withdrawals (cooling-off of a method added in the dashboard); null: at once. */
  usableFrom: string | null;
  addedBy: WithdrawalMethodOrigin;
}

export interface NewWithdrawalMethod {
  merchantId: string;
  currency: string;
  address: string;
  label: string | null;
  /** Null for none (methods the operator adds). */
  usableFrom?: string | null;
  addedBy?: WithdrawalMethodOrigin;
}

export async function insertWithdrawalMethod(
  tx: Tx,
  fields: NewWithdrawalMethod,
  now: string,
): Promise<WithdrawalMethod> {
  const usableFrom = fields.usableFrom ?? null;
  const addedBy = fields.addedBy ?? "operator";
  const inserted = await tx.db
    .insertInto("withdrawal_methods")
    .values({
      merchant_id: fields.merchantId,
      currency: fields.currency,
      address: fields.address,
      label: fields.label,
      created_at: now,
      usable_from: usableFrom,
      added_by: addedBy,
    })
    .returning("id")
    .executeTakeFirstOrThrow();
  return {
    id: Number(inserted.id),
    merchantId: fields.merchantId,
    currency: fields.currency,
    address: fields.address,
    label: fields.label,
    createdAt: now,
    disabledAt: null,
    usableFrom,
    addedBy,
  };
}

/** Disables a merchant's method (once: a disabled one keeps its first time); answers the method, or null when the merchant has none with this id. */
export async function disableWithdrawalMethod(
  tx: Tx,
  merchantId: string,
  id: number,
  now: string,
): Promise<WithdrawalMethod | null> {
  await tx.db
    .updateTable("withdrawal_methods")
    .set({ disabled_at: now })
    .where("id", "=", id)
    .where("merchant_id", "=", merchantId)
    .where("disabled_at", "is", null)
    .execute();
  return findMerchantWithdrawalMethod(tx, merchantId, id);
}

/** Sets or clears a merchant's method's label; null when the merchant has none with this id. */
export async function labelWithdrawalMethod(
  tx: Tx,
  merchantId: string,
  id: number,
  label: string | null,
): Promise<WithdrawalMethod | null> {
  await tx.db
    .updateTable("withdrawal_methods")
    .set({ label })
    .where("id", "=", id)
    .where("merchant_id", "=", merchantId)
    .execute();
  return findMerchantWithdrawalMethod(tx, merchantId, id);
}

/** The merchant's method with this id; another merchant's is null, exactly as an unknown one. */
export async function findMerchantWithdrawalMethod(
  tx: Tx,
  merchantId: string,
  id: number,
): Promise<WithdrawalMethod | null> {
  const r = await tx.db
    .selectFrom("withdrawal_methods")
    .selectAll()
    .where("id", "=", id)
    .where("merchant_id", "=", merchantId)
    .executeTakeFirst();
  return r ? withdrawalMethodOf(r) : null;
}

function withdrawalMethodOf(r: Selectable<WithdrawalMethodsTable>): WithdrawalMethod {
  return {
    id: Number(r.id),
    merchantId: r.merchant_id,
    currency: r.currency,
    address: r.address,
    label: r.label,
    createdAt: r.created_at,
    disabledAt: r.disabled_at ?? null,
    usableFrom: r.usable_from ?? null,
    addedBy: r.added_by === "dashboard" ? "dashboard" : "operator",
  };
}

/** A merchant has at most this many withdrawal methods, so their listing is bounded (docs/operator-api.md). */
export const WITHDRAWAL_METHODS_PER_MERCHANT = 100;

/**
 * How many withdrawal methods the merchant has; on PostgreSQL the merchant's row stays locked
 * until the transaction ends, so two processes adding methods at once take turns at the bound.
 */
export async function countWithdrawalMethodsLocked(tx: Tx, merchantId: string): Promise<number> {
  if (tx.dialect === "postgres") {
    await tx.db.selectFrom("merchants").select("id").where("id", "=", merchantId).forUpdate().execute();
  }
  const r = await tx.db
    .selectFrom("withdrawal_methods")
    .select((eb) => eb.fn.countAll().as("n"))
    .where("merchant_id", "=", merchantId)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

export async function listWithdrawalMethods(tx: Tx, merchantId: string): Promise<WithdrawalMethod[]> {
  const rows = await tx.db
    .selectFrom("withdrawal_methods")
    .selectAll()
    .where("merchant_id", "=", merchantId)
    .orderBy("id")
    .limit(WITHDRAWAL_METHODS_PER_MERCHANT)
    .execute();
  return rows.map(withdrawalMethodOf);
}

const withdrawalMethodQuery = preparedQuery(["id"] as const, (db, a) =>
  db.selectFrom("withdrawal_methods").selectAll().where("id", "=", placeholder<number>(a.id)),
);

export async function findWithdrawalMethod(tx: Tx, id: number): Promise<WithdrawalMethod | null> {
  return readThrough(tx, "withdrawal_methods", String(id), async () => {
    const [r] = await withdrawalMethodQuery(tx, { id });
    return r ? withdrawalMethodOf(r) : null;
  });
}

export interface ApiKeyListing {
  id: string;
  prefix: string;
  legacy: boolean;
  createdAt: string;
  lastUsedAt: string | null;
  lastUsedFrom: string | null;
  revokedAt: string | null;
  /** null: a full key. */
  scopes: string[] | null;
  /** null: from anywhere. */
  allowedAddresses: string[] | null;
}

/** A merchant's keys, newest first (a merchant holds few; bounded all the same). Never the key or its secret. */
export async function listApiKeys(tx: Tx, merchantId: string): Promise<ApiKeyListing[]> {
  const rows = await tx.db
    .selectFrom("api_keys")
    .select([
      "id",
      "key_prefix",
      "legacy",
      "created_at",
      "last_used_at",
      "last_used_from",
      "revoked_at",
      "scopes",
      "allowed_addresses",
    ])
    .where("merchant_id", "=", merchantId)
    .orderBy("created_at", "desc")
    .limit(500)
    .execute();
  return rows.map((r) => ({
    id: r.id,
    prefix: r.key_prefix,
    legacy: r.legacy === 1,
    createdAt: r.created_at,
    lastUsedAt: r.last_used_at ?? null,
    lastUsedFrom: r.last_used_from ?? null,
    revokedAt: r.revoked_at,
    scopes: r.scopes ? (JSON.parse(r.scopes) as string[]) : null,
    allowedAddresses: r.allowed_addresses ? (JSON.parse(r.allowed_addresses) as string[]) : null,
  }));
}

/** Revokes one of the merchant's live keys by its id (the dashboard never holds the key itself). */
export async function revokeApiKeyById(tx: Tx, merchantId: string, id: string, now: string): Promise<boolean> {
  const result = await tx.db
    .updateTable("api_keys")
    .set({ revoked_at: now })
    .where("id", "=", id)
    .where("merchant_id", "=", merchantId)
    .where("revoked_at", "is", null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/**
 * Records a key's use, its time and client address; callers write it at most once a minute per key
 * (see auth.ts). Only these two columns: the read caches do not drop the key for them (sharedCache.ts).
 */
export async function touchApiKey(tx: Tx, id: string, now: string, from: string): Promise<void> {
  await tx.db.updateTable("api_keys").set({ last_used_at: now, last_used_from: from }).where("id", "=", id).execute();
}
