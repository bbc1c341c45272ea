// The hot wallet's one outbox (product §26): every transaction it signs, whatever its purpose, in one table; payouts', nonce fills' and factory deployments' transactions move into it, in one migration transaction.
import { type Kysely, sql } from "kysely";
import type { Hex } from "viem";
import { loadViem, viem } from "./viem.ts";

/** Today's states of a fill or a deployment, as the outbox's (src/domain/hotTransaction.ts). */
const FILL_STATES: Record<string, string> = { signed: "signed", mined: "confirmed", replaced: "replaced" };
const DEPLOYMENT_STATES: Record<string, string> = {
  signed: "signed",
  mined: "confirmed",
  failed: "reverted",
  replaced: "replaced",
};

/** Rows copied per statement: bounds one statement's size on a long history. */
const COPY_BATCH = 200;

/** A row to copy into the outbox: its call, gas and fees are read from `raw`, its progress defaults to none. */
export interface OutboxRow {
  id: string;
  purpose: string;
  purpose_id: string;
  network: string;
  chain_id: number;
  from_address: string;
  nonce: number;
  hash: string;
  raw: string;
  state: string;
  token_contract: string | null;
  token_amount: string;
  replaces_id: string | null;
  created_at: string;
  updated_at: string;
  last_error?: string | null;
  broadcast_at?: string | null;
  broadcast_count?: number;
  block_number?: string | null;
  block_hash?: string | null;
  receipt_status?: string | null;
  gas_used?: string | null;
  effective_gas_price?: string | null;
}

/** The call, gas and fees of a signed transaction, read from its bytes: exactly what it was signed with (migrations 041 and 042 read theirs with it too). */
export function callOfRaw(raw: string) {
  const t = viem().parseTransaction(raw as Hex);
  const maxFee = t.maxFeePerGas ?? t.gasPrice ?? 0n;
  return {
    to_address: (t.to ?? "0x").toLowerCase(),
    value_wei: (t.value ?? 0n).toString(),
    data: t.data ?? null,
    gas_limit: (t.gas ?? 0n).toString(),
    max_fee_per_gas: maxFee.toString(),
    max_priority_fee_per_gas: (t.maxPriorityFeePerGas ?? maxFee).toString(),
  };
}

/** Copies rows into the outbox in bounded statements (migrations 041 and 042 copy theirs with it too). */
export async function copyIntoOutbox(db: Kysely<any>, rows: readonly OutboxRow[]): Promise<void> {
  if (rows.length > 0) await loadViem();
  for (let i = 0; i < rows.length; i += COPY_BATCH) {
    const values = rows.slice(i, i + COPY_BATCH).map((r) => ({
      broadcast_at: null,
      broadcast_count: 0,
      last_error: null,
      block_number: null,
      block_hash: null,
      receipt_status: null,
      gas_used: null,
      effective_gas_price: null,
      ...r,
      ...callOfRaw(r.raw),
    }));
    await db.insertInto("hot_transactions").values(values).execute();
  }
}

async function createTable(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("hot_transactions")
    .addColumn("id", "text", (c) => c.primaryKey())
    // What it is for, and that work's own id (a payout's request key, a flush's id, ...).
    .addColumn("purpose", "text", (c) => c.notNull())
    .addColumn("purpose_id", "text", (c) => c.notNull())
    .addColumn("network", "text", (c) => c.notNull())
    .addColumn("chain_id", "integer", (c) => c.notNull())
    .addColumn("from_address", "text", (c) => c.notNull())
    .addColumn("nonce", "integer", (c) => c.notNull())
    .addColumn("hash", "text", (c) => c.notNull().unique())
    // The exact bytes broadcast, again and again if need be; a replacement is signed from the call below.
    .addColumn("raw", "text", (c) => c.notNull())
    .addColumn("to_address", "text", (c) => c.notNull())
    .addColumn("value_wei", "text", (c) => c.notNull())
    .addColumn("data", "text")
    // Tokens it carries out of the hot wallet (a payout's), promised until it is mined.
    .addColumn("token_contract", "text")
    .addColumn("token_amount", "text", (c) => c.notNull())
    .addColumn("gas_limit", "text", (c) => c.notNull())
    .addColumn("max_fee_per_gas", "text", (c) => c.notNull())
    .addColumn("max_priority_fee_per_gas", "text", (c) => c.notNull())
    // The transaction this one replaces at the same nonce (null for the first of its nonce).
    .addColumn("replaces_id", "text")
    .addColumn("state", "text", (c) => c.notNull())
    .addColumn("broadcast_at", "text")
    .addColumn("broadcast_count", "integer", (c) => c.notNull())
    .addColumn("last_error", "text")
    .addColumn("block_number", "text")
    .addColumn("block_hash", "text")
    .addColumn("receipt_status", "text")
    .addColumn("gas_used", "text")
    .addColumn("effective_gas_price", "text")
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("updated_at", "text", (c) => c.notNull())
    .execute();
  // Two open first transactions at one nonce would be two processes signing one nonce: refused.
  await db.schema
    .createIndex("hot_transactions_first_open_at_nonce")
    .on("hot_transactions")
    .columns(["network", "from_address", "nonce"])
    .unique()
    .where(sql<boolean>`replaces_id is null and state in ('signed', 'broadcast', 'dropped', 'mined')`)
    .execute();
  await db.schema
    .createIndex("hot_transactions_open")
    .on("hot_transactions")
    .columns(["network", "state", "nonce"])
    .execute();
  // Every hot wallet that ever signed is the service's own (src/store/serviceAddresses.ts).
  await db.schema.createIndex("hot_transactions_from").on("hot_transactions").column("from_address").execute();
  await db.schema
    .createIndex("hot_transactions_purpose")
    .on("hot_transactions")
    .columns(["purpose", "purpose_id"])
    .execute();
}

async function payoutRows(db: Kysely<any>): Promise<OutboxRow[]> {
  const rows = await db.selectFrom("payout_transactions").selectAll().orderBy("created_at").orderBy("id").execute();
  return rows.map((r) => ({
    id: r.id,
    purpose: "payout",
    purpose_id: r.payout_request_id,
    network: r.network,
    chain_id: Number(r.chain_id),
    from_address: r.from_address,
    nonce: Number(r.nonce),
    hash: r.hash,
    raw: r.raw,
    state: r.state,
    token_contract: r.asset_contract,
    token_amount: r.asset_contract === null ? "0" : r.amount,
    replaces_id: r.replaces_id,
    created_at: r.created_at,
    updated_at: r.updated_at,
    last_error: r.last_error,
    broadcast_at: r.broadcast_at,
    broadcast_count: Number(r.broadcast_count),
    block_number: r.block_number,
    block_hash: r.block_hash,
    receipt_status: r.receipt_status,
    gas_used: r.gas_used,
    effective_gas_price: r.effective_gas_price,
  }));
}

/** Fills and deployments: each row the first at its nonce, or (fills) a replacement of the one before it at that nonce. */
async function fillAndDeploymentRows(db: Kysely<any>): Promise<OutboxRow[]> {
  const networks = new Map(
    (await db.selectFrom("networks").select(["name", "chain_id"]).execute()).map((n) => [n.name, Number(n.chain_id)]),
  );
  const fills = await db.selectFrom("nonce_fills").selectAll().orderBy("created_at").orderBy("id").execute();
  const deployments = await db.selectFrom("factory_deployments").selectAll().orderBy("created_at").execute();
  if (fills.length + deployments.length > 0) await loadViem();
  const previousAt = new Map<string, string>();
  const rows: OutboxRow[] = [];
  for (const f of fills) {
    const key = `${f.network}:${f.from_address}:${f.nonce}`;
    rows.push({
      ...common(f as never, networks),
      purpose: "fill",
      purpose_id: `${f.network}:${f.nonce}`,
      state: FILL_STATES[f.state] ?? "replaced",
      replaces_id: previousAt.get(key) ?? null,
      last_error: f.last_error,
    });
    previousAt.set(key, f.id);
  }
  for (const d of deployments) {
    const state = DEPLOYMENT_STATES[d.state] ?? "replaced";
    rows.push({
      ...common(d as never, networks),
      purpose: "deployment",
      purpose_id: d.factory,
      state,
      replaces_id: null,
    });
  }
  return rows;
}

function common(
  r: {
    id: string;
    network: string;
    from_address: string;
    nonce: number;
    hash: string;
    raw: string;
    created_at: string;
    updated_at: string;
  },
  networks: ReadonlyMap<string, number>,
) {
  const chainId = networks.get(r.network) ?? viem().parseTransaction(r.raw as Hex).chainId ?? 0;
  return {
    id: r.id,
    network: r.network,
    chain_id: chainId,
    from_address: r.from_address,
    nonce: Number(r.nonce),
    hash: r.hash,
    raw: r.raw,
    token_contract: null,
    token_amount: "0",
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

async function move(db: Kysely<any>): Promise<void> {
  const tables = new Set((await db.introspection.getTables()).map((t) => t.name));
  // Done already, and killed before the migration was recorded (SQLite records it outside this transaction).
  if (tables.has("hot_transactions") && !tables.has("payout_transactions")) return;
  await createTable(db);
  await copyIntoOutbox(db, await payoutRows(db));
  await copyIntoOutbox(db, await fillAndDeploymentRows(db));
  await db.schema.dropTable("payout_transactions").execute();
  await db.schema.dropTable("nonce_fills").execute();
  await db.schema.dropTable("factory_deployments").execute();
}

export const hotTransactions = {
  async up(db: Kysely<any>): Promise<void> {
    // PostgreSQL runs each migration in a transaction; Kysely does not on SQLite, whose DDL is
    // transactional all the same: one transaction, so a process killed midway leaves the old tables whole.
    if (db.isTransaction) await move(db);
    else await db.transaction().execute((trx) => move(trx));
  },
};
