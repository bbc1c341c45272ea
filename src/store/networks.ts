// Networks the operator configured (product §12), their scanners' checkpoints and leases, deposit indexes and hot-wallet nonces.
import { sql } from "kysely";
import { guardOn } from "../domain/guards.ts";
import { newRowId } from "../domain/ids.ts";
import { DEFAULT_CONFIRMATIONS } from "../domain/networks.ts";
import { assert, err, ok, type Result } from "../domain/result.ts";
import type { NetworksTable } from "./schema.ts";
import type { SecretBox } from "./secrets.ts";
import type { Store, Tx } from "./store.ts";

export interface Network {
  name: string;
  chainId: number;
  /** Opened from its sealed form: never answered or logged (see maskRpcUrl). */
  rpcUrl: string;
  confirmations: number;
  explorerUrl: string | null;
  scannedBlock: bigint | null;
  scannedHash: string | null;
  headBlock: bigint | null;
  headSeenAt: string | null;
  leaseOwner: string | null;
  leaseUntil: string | null;
  nodeError: string | null;
  nodeErrorAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface NetworkInput {
  chainId: number;
  rpcUrl: string;
  confirmations?: number;
  explorerUrl?: string | null;
  /**
   * The node's head when the operator configured it (product §19): a new scanner (or one on
   * another chain) starts there, so a payment mined before its first pass is still seen.
   */
  head?: { number: bigint; hash: string; parentHash: string; timestamp: bigint };
}

/** A block's timestamp (seconds) as the store's time text. */
export function blockTime(timestamp: bigint): string {
  return new Date(Number(timestamp) * 1000).toISOString();
}

/** The checkpoint a scanner starting at `head` begins from: the block before it, so the head block itself is scanned. */
function startCheckpoint(head: NonNullable<NetworkInput["head"]>) {
  if (head.number === 0n) return { scanned_block: "0", scanned_hash: head.hash };
  return { scanned_block: (head.number - 1n).toString(), scanned_hash: head.parentHash };
}

/** Whether a deposit address was ever issued for a currency of the network (its chain id is then fixed). */
export async function networkIssuedDepositAddresses(tx: Tx, name: string): Promise<boolean> {
  const row = await tx.db
    .selectFrom("invoices")
    .innerJoin("currencies", "currencies.ticker", "invoices.currency")
    .select("invoices.id")
    .where("currencies.network", "=", name)
    .where("invoices.deposit_address", "is not", null)
    .limit(1)
    .executeTakeFirst();
  if (row) return true;
  const paid = await tx.db
    .selectFrom("invoice_payments")
    .select("id")
    .where("network", "=", name)
    .limit(1)
    .executeTakeFirst();
  return paid !== undefined;
}

function big(value: number | string | null): bigint | null {
  return value === null ? null : BigInt(value);
}

/** The associated data of a sealed RPC URL: a sealed URL copied to another network does not open. */
function rpcAad(name: string): string {
  return `network:${name}:rpc_url`;
}

function fromRow(r: NetworksTable, box: SecretBox): Network {
  return {
    name: r.name,
    chainId: Number(r.chain_id),
    rpcUrl: box.open(r.rpc_url_sealed, rpcAad(r.name)),
    confirmations: r.confirmations,
    explorerUrl: r.explorer_url,
    scannedBlock: big(r.scanned_block),
    scannedHash: r.scanned_hash,
    headBlock: big(r.head_block),
    headSeenAt: r.head_seen_at,
    leaseOwner: r.lease_owner,
    leaseUntil: r.lease_until,
    nodeError: r.node_error,
    nodeErrorAt: r.node_error_at,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

/**
 * Creates or replaces a network's configuration. A changed chain id starts the scanner afresh
 * (another chain's checkpoint and block hashes mean nothing); otherwise the checkpoint is kept.
 */
export async function putNetwork(
  tx: Tx,
  box: SecretBox,
  name: string,
  input: NetworkInput,
  now: string,
): Promise<Result<{ network: Network; created: boolean }, "network_in_use">> {
  const existing = await tx.db
    .selectFrom("networks")
    .select(["chain_id", "scanned_block"])
    .where("name", "=", name)
    .$if(tx.dialect === "postgres", (qb) => qb.forUpdate())
    .executeTakeFirst();
  const sealed = box.seal(input.rpcUrl, rpcAad(name));
  const confirmations = input.confirmations ?? DEFAULT_CONFIRMATIONS;
  const explorerUrl = input.explorerUrl ?? null;
  if (!existing) {
    await tx.db
      .insertInto("networks")
      .values({
        name,
        chain_id: input.chainId,
        rpc_url_sealed: sealed,
        confirmations,
        explorer_url: explorerUrl,
        scanned_block: null,
        scanned_hash: null,
        ...(input.head ? startCheckpoint(input.head) : {}),
        head_block: null,
        head_seen_at: null,
        lease_owner: null,
        lease_until: null,
        node_error: null,
        node_error_at: null,
        hot_nonce: null,
        created_at: now,
        updated_at: now,
      })
      .execute();
  } else {
    const chainChanged = Number(existing.chain_id) !== input.chainId;
    // Deposit addresses of this network were shown to payers on its chain: moving it to another
    // chain would stop watching them (and its checkpoint and payments mean nothing there).
    if (chainChanged && (await networkIssuedDepositAddresses(tx, name))) {
      return err("network_in_use", `deposit addresses were issued on ${name}: its chainId cannot change`);
    }
    const restart = chainChanged || existing.scanned_block === null;
    await tx.db
      .updateTable("networks")
      .set({
        chain_id: input.chainId,
        rpc_url_sealed: sealed,
        confirmations,
        explorer_url: explorerUrl,
        node_error: null,
        node_error_at: null,
        updated_at: now,
        ...(chainChanged ? { scanned_block: null, scanned_hash: null, head_block: null, hot_nonce: null } : {}),
        ...(restart && input.head ? startCheckpoint(input.head) : {}),
      })
      .where("name", "=", name)
      .execute();
    if (chainChanged) await tx.db.deleteFrom("scanned_blocks").where("network", "=", name).execute();
  }
  const network = await findNetwork(tx, box, name);
  assert(network, `network ${name} was just written`);
  return ok({ network, created: !existing });
}

export async function findNetwork(tx: Tx, box: SecretBox, name: string): Promise<Network | null> {
  const r = await tx.db.selectFrom("networks").selectAll().where("name", "=", name).executeTakeFirst();
  return r ? fromRow(r, box) : null;
}

export async function listNetworks(tx: Tx, box: SecretBox, limit?: number): Promise<Network[]> {
  const rows = await tx.db
    .selectFrom("networks")
    .selectAll()
    .orderBy("name")
    .$if(limit !== undefined, (qb) => qb.limit(limit ?? 0))
    .execute();
  return rows.map((r) => fromRow(r, box));
}

/** Names of the configured networks: the gate's input (one small indexed read). */
export async function networkNames(tx: Tx): Promise<string[]> {
  const rows = await tx.db.selectFrom("networks").select("name").execute();
  return rows.map((r) => r.name);
}

/** A scanner lease as held: its owner and the token every write of a batch checks (product §19). */
export interface ScanLease {
  owner: string;
  token: string;
}

/**
 * Takes or renews the scanner lease of a network for `owner` until `until`. Answers the lease
 * when `owner` holds it now (only when nobody else holds an unexpired one), else null. Taking it
 * over (a new owner, or after it expired) gives a new token: writes of a batch under the old one
 * are refused by fenceScanLease.
 */
export async function takeScanLease(
  store: Store,
  name: string,
  owner: string,
  now: string,
  until: string,
): Promise<ScanLease | null> {
  return store.transaction(async (tx) => {
    const row = await tx.db
      .selectFrom("networks")
      .select(["lease_owner", "lease_until", "lease_token"])
      .where("name", "=", name)
      .$if(tx.dialect === "postgres", (qb) => qb.forUpdate())
      .executeTakeFirst();
    if (!row) return null;
    const heldByOther = row.lease_owner !== null && row.lease_owner !== owner && (row.lease_until ?? "") > now;
    if (heldByOther) return null;
    const renewing = row.lease_owner === owner && (row.lease_until ?? "") > now && row.lease_token;
    const token = renewing ? (row.lease_token as string) : newRowId();
    await tx.db
      .updateTable("networks")
      .set({ lease_owner: owner, lease_until: until, lease_token: token })
      .where("name", "=", name)
      .execute();
    return { owner, token };
  });
}

/** A scan batch's lease expired or was taken over: the batch's transaction is rolled back. */
export class ScanLeaseLost extends Error {}

/**
 * Checks, inside the caller's transaction, that `lease` still holds the network (same owner and
 * token, not expired at `now`); throws ScanLeaseLost otherwise, so the transaction writes nothing.
 * The check is an update of the network row: on PostgreSQL it locks the row until commit, so a
 * takeover waits for this transaction or this one sees the takeover.
 */
export async function fenceScanLease(tx: Tx, name: string, lease: ScanLease, now: string): Promise<void> {
  // Guard lease-token (src/domain/guards.ts): off, a batch writes whoever holds the lease now.
  if (!guardOn("lease-token")) return;
  const result = await tx.db
    .updateTable("networks")
    .set({ lease_token: lease.token })
    .where("name", "=", name)
    .where("lease_owner", "=", lease.owner)
    .where("lease_token", "=", lease.token)
    .where("lease_until", ">", now)
    .executeTakeFirst();
  if (result.numUpdatedRows !== 1n) {
    throw new ScanLeaseLost(`the scanner lease of ${name} expired or was taken over: the batch wrote nothing`);
  }
}

export async function releaseScanLease(store: Store, name: string, owner: string): Promise<void> {
  await store.transaction(async (tx) => {
    await tx.db
      .updateTable("networks")
      .set({ lease_owner: null, lease_until: null, lease_token: null })
      .where("name", "=", name)
      .where("lease_owner", "=", owner)
      .execute();
  });
}

/** Records what the node said last: its head (or null to keep it) and its failure (null: healthy). */
export async function recordNodeState(
  tx: Tx,
  name: string,
  state: { headBlock?: bigint; nodeError: string | null },
  now: string,
): Promise<void> {
  await tx.db
    .updateTable("networks")
    .set({
      ...(state.headBlock === undefined ? {} : { head_block: state.headBlock.toString(), head_seen_at: now }),
      node_error: state.nodeError,
      node_error_at: state.nodeError === null ? null : now,
    })
    .where("name", "=", name)
    .execute();
}

/** The block hashes stored for [from, to] of a network, by number. */
export async function scannedHashes(tx: Tx, name: string, from: bigint, to: bigint): Promise<Map<bigint, string>> {
  const rows = await tx.db
    .selectFrom("scanned_blocks")
    .select(["number", "hash"])
    .where("network", "=", name)
    .where("number", ">=", from.toString())
    .where("number", "<=", to.toString())
    .execute();
  return new Map(rows.map((r) => [BigInt(r.number), r.hash]));
}

/**
 * Moves the checkpoint to `block`/`hash` and stores the hashes of the blocks just scanned; hashes
 * older than `keepFrom` are forgotten (a reorganisation deeper than confirmations cannot undo a
 * confirmed payment, so only that window is compared).
 */
export async function advanceCheckpoint(
  tx: Tx,
  name: string,
  blocks: readonly { number: bigint; hash: string; timestamp?: bigint }[],
  keepFrom: bigint,
): Promise<void> {
  if (blocks.length > 0) {
    const numbers = blocks.map((b) => b.number.toString());
    await tx.db.deleteFrom("scanned_blocks").where("network", "=", name).where("number", "in", numbers).execute();
    await tx.db
      .insertInto("scanned_blocks")
      .values(blocks.map((b) => ({ network: name, number: b.number.toString(), hash: b.hash })))
      .execute();
    const last = blocks[blocks.length - 1] as { number: bigint; hash: string; timestamp?: bigint };
    await tx.db
      .updateTable("networks")
      .set({
        scanned_block: last.number.toString(),
        scanned_hash: last.hash,
        scanned_time: last.timestamp === undefined ? null : blockTime(last.timestamp),
      })
      .where("name", "=", name)
      .execute();
  }
  await tx.db
    .deleteFrom("scanned_blocks")
    .where("network", "=", name)
    .where("number", "<", keepFrom.toString())
    .execute();
}

/** Moves the checkpoint back (a reorganisation): blocks after `block` are forgotten and scanned again. */
export async function rewindCheckpoint(tx: Tx, name: string, block: bigint | null, hash: string | null) {
  await tx.db
    .updateTable("networks")
    // The fork block's stamp is not at hand: expiry waits for the next block scanned.
    .set({ scanned_block: block === null ? null : block.toString(), scanned_hash: hash, scanned_time: null })
    .where("name", "=", name)
    .execute();
  await tx.db
    .deleteFrom("scanned_blocks")
    .where("network", "=", name)
    .where("number", ">", (block ?? -1n).toString())
    .execute();
}

/**
 * The next deposit index: unique across processes and never reused, even when the transaction
 * that took it rolls back (PostgreSQL: a SEQUENCE; SQLite: a counter row, whose writes the single
 * writer serializes; a rolled-back SQLite index was never seen by anyone).
 */
export async function nextDepositIndex(tx: Tx): Promise<number> {
  if (tx.dialect === "postgres") {
    const { rows } = await sql<{ n: string }>`SELECT nextval('deposit_index_seq') AS n`.execute(tx.db);
    const n = rows[0]?.n;
    assert(n !== undefined, "nextval answers a row");
    return Number(n);
  }
  const row = await tx.db
    .updateTable("counters")
    .set((eb) => ({ value: eb("value", "+", 1) }))
    .where("name", "=", "deposit_index")
    .returning("value")
    .executeTakeFirst();
  assert(row, "the deposit_index counter exists");
  return row.value;
}

/**
 * The hot wallet's next nonce on a network, taken in the caller's transaction (the network row is
 * locked until it commits, so two processes never take the same one). `chainNonce` is what the node
 * counts (pending): the larger of the two is used, so transactions sent from elsewhere are skipped.
 * The count belongs to one address: when the hot wallet changed (another WALLET_MNEMONIC), the
 * previous wallet's count is dropped and the new one starts from its chain nonce, instead of
 * leaving a gap that no transaction of the new wallet could ever fill.
 */
export async function takeHotNonce(tx: Tx, name: string, hotAddress: string, chainNonce: number): Promise<number> {
  const row = await tx.db
    .selectFrom("networks")
    .select(["hot_nonce", "hot_nonce_address"])
    .where("name", "=", name)
    .$if(tx.dialect === "postgres", (qb) => qb.forUpdate())
    .executeTakeFirst();
  assert(row, `network ${name} exists`);
  const address = hotAddress.toLowerCase();
  const sameWallet =
    row.hot_nonce_address === null || row.hot_nonce_address === undefined || row.hot_nonce_address === address;
  const stored = row.hot_nonce === null || !sameWallet ? 0 : Number(row.hot_nonce);
  // The reservation: never a nonce already taken here, even one the node has not seen yet. Guard
  // nonce-reservation (src/domain/guards.ts): off, the chain's pending count alone.
  const nonce = guardOn("nonce-reservation") ? Math.max(stored, chainNonce) : chainNonce;
  await tx.db
    .updateTable("networks")
    .set({ hot_nonce: nonce + 1, hot_nonce_address: address })
    .where("name", "=", name)
    .execute();
  return nonce;
}

/**
 * The nonce takeHotNonce would answer now, without taking it or locking anything: a guess for
 * signing before the lock (a payout signed at another nonce is signed again under it).
 */
export async function peekHotNonce(tx: Tx, name: string, hotAddress: string, chainNonce: number): Promise<number> {
  const row = await tx.db
    .selectFrom("networks")
    .select(["hot_nonce", "hot_nonce_address"])
    .where("name", "=", name)
    .executeTakeFirst();
  const counted = row?.hot_nonce !== null && row?.hot_nonce !== undefined;
  const sameWallet = row?.hot_nonce_address == null || row.hot_nonce_address === hotAddress.toLowerCase();
  return Math.max(counted && sameWallet ? Number(row?.hot_nonce) : 0, chainNonce);
}

/** A lease owner id for this process's scanners. */
export function newLeaseOwner(): string {
  return newRowId();
}

/**
 * The explorer URL template of each network that has one (for transaction links, see
 * explorerTxUrl in src/domain/networks.ts); reads no secret.
 */
export async function explorerUrls(tx: Tx): Promise<Map<string, string>> {
  const rows = await tx.db
    .selectFrom("networks")
    .select(["name", "explorer_url"])
    .where("explorer_url", "is not", null)
    .execute();
  return new Map(rows.flatMap((r) => (r.explorer_url === null ? [] : [[r.name, r.explorer_url] as const])));
}
