// Flushes' transactions move into the hot wallet's one outbox (product §24, §26): each flush's signed transactions become hot_transactions rows of purpose `flush` chained at its nonce, and the flushes table keeps only what the flush itself owns; in one migration transaction.
import { type Kysely, sql } from "kysely";
import type { Hex } from "viem";
import type { Dialect } from "../dialect.ts";
import { callOfRaw } from "./040_hot_transactions.ts";
import { loadViem, viem } from "./viem.ts";

/** Rows copied per statement: bounds one statement's size on a long history. */
const COPY_BATCH = 200;

/** The transaction columns of migration 032 the outbox now holds. */
const MOVED_COLUMNS = [
  "nonce",
  "from_address",
  "signed_raw",
  "tx_hash",
  "replaced",
  "gas_limit",
  "max_fee_per_gas",
  "max_priority_fee_per_gas",
  "attempts",
  "signed_at",
  "resigned_at",
  "next_attempt_at",
] as const;

interface OldFlush {
  id: string;
  network: string;
  nonce: number;
  from_address: string;
  signed_raw: string;
  replaced: string;
  state: string;
  gas_used: string | null;
  gas_cost: string | null;
  last_error: string | null;
  signed_at: string;
  resigned_at: string;
  updated_at: string;
}

/** A flush's state as its rows' states: [the current transaction's, the others']. */
function statesOf(state: string): [string, string] {
  if (state === "signed") return ["signed", "signed"];
  if (state === "completed") return ["confirmed", "replaced"];
  if (state === "reverted") return ["reverted", "replaced"];
  return ["replaced", "replaced"];
}

/** The call, gas and fees of a row, as 040 reads them, and its chain. */
function fromRaw(raw: string) {
  return { ...callOfRaw(raw), chain_id: viem().parseTransaction(raw as Hex).chainId ?? 0 };
}

/** A settled flush's receipt as the outbox keeps it (the block is not known any more). */
function receiptOf(f: OldFlush, state: string) {
  if (state !== "confirmed" && state !== "reverted") return {};
  const used = f.gas_used === null ? null : BigInt(f.gas_used);
  const price = used !== null && used > 0n && f.gas_cost !== null ? BigInt(f.gas_cost) / used : null;
  return {
    receipt_status: state === "confirmed" ? "success" : "reverted",
    gas_used: f.gas_used,
    effective_gas_price: price?.toString() ?? null,
  };
}

/** A flush's transactions, oldest first (its replaced ones, then its current one), chained at its nonce. */
function rowsOf(f: OldFlush, chainIds: ReadonlyMap<string, number>) {
  // A settled flush kept its mined transaction as current: it is not also one of those it replaced.
  const raws = [...(JSON.parse(f.replaced) as string[]).filter((r) => r !== f.signed_raw), f.signed_raw];
  const [current, others] = statesOf(f.state);
  return raws.map((raw, i) => {
    const last = i === raws.length - 1;
    const state = last ? current : others;
    const call = fromRaw(raw);
    return {
      id: `${f.id}:${String(i).padStart(2, "0")}`,
      purpose: "flush",
      purpose_id: f.id,
      network: f.network,
      from_address: f.from_address.toLowerCase(),
      nonce: Number(f.nonce),
      hash: viem().keccak256(raw as Hex),
      raw,
      ...call,
      chain_id: chainIds.get(f.network) ?? call.chain_id,
      token_contract: null,
      token_amount: "0",
      replaces_id: i === 0 ? null : `${f.id}:${String(i - 1).padStart(2, "0")}`,
      state,
      broadcast_at: null,
      broadcast_count: 0,
      last_error: last ? f.last_error : null,
      block_number: null,
      block_hash: null,
      receipt_status: null,
      gas_used: null,
      effective_gas_price: null,
      ...(last ? receiptOf(f, state) : {}),
      // The replacement delay runs from the current transaction's signing, as it did.
      created_at: last ? f.resigned_at : f.signed_at,
      updated_at: f.updated_at,
    };
  });
}

async function copy(db: Kysely<any>): Promise<void> {
  const chainIds = new Map(
    (await db.selectFrom("networks").select(["name", "chain_id"]).execute()).map((n) => [n.name, Number(n.chain_id)]),
  );
  const flushes = (await db
    .selectFrom("flushes")
    .selectAll()
    .orderBy("created_at")
    .orderBy("id")
    .execute()) as OldFlush[];
  if (flushes.length > 0) await loadViem();
  const rows = flushes.flatMap((f) => rowsOf(f, chainIds));
  for (let i = 0; i < rows.length; i += COPY_BATCH) {
    await db
      .insertInto("hot_transactions")
      .values(rows.slice(i, i + COPY_BATCH))
      .execute();
  }
}

/** PostgreSQL: the columns dropped in place (their unique constraint first). */
async function dropColumnsPostgres(db: Kysely<any>): Promise<void> {
  await sql`alter table flushes drop constraint flushes_network_nonce`.execute(db);
  let alter = db.schema.alterTable("flushes").dropColumn(MOVED_COLUMNS[0]);
  for (const column of MOVED_COLUMNS.slice(1)) alter = alter.dropColumn(column);
  await alter.execute();
}

/**
 * SQLite cannot drop columns of a unique constraint: the table is rebuilt under its own name inside
 * this transaction. Foreign keys (flush_deposits.flush_id) are deferred to the commit, by which the
 * rows are back, so the check still holds the rebuild to every flush kept.
 */
async function rebuildSqlite(db: Kysely<any>): Promise<void> {
  const kept = await db
    .selectFrom("flushes")
    .select(["id", "network", "factory", "state", "gas_used", "gas_cost", "last_error", "created_at", "updated_at"])
    .execute();
  await sql`pragma defer_foreign_keys = on`.execute(db);
  await db.schema.dropTable("flushes").execute();
  await db.schema
    .createTable("flushes")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("network", "text", (c) => c.notNull())
    .addColumn("factory", "text", (c) => c.notNull())
    .addColumn("state", "text", (c) => c.notNull().references("flush_states.state"))
    .addColumn("gas_used", "text")
    .addColumn("gas_cost", "text")
    .addColumn("last_error", "text")
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("updated_at", "text", (c) => c.notNull())
    .execute();
  for (let i = 0; i < kept.length; i += COPY_BATCH) {
    await db
      .insertInto("flushes")
      .values(kept.slice(i, i + COPY_BATCH))
      .execute();
  }
  await db.schema.createIndex("flushes_open").on("flushes").columns(["network", "state"]).execute();
}

async function move(db: Kysely<any>, dialect: Dialect): Promise<void> {
  const flushes = (await db.introspection.getTables()).find((t) => t.name === "flushes");
  // Done already, and killed before the migration was recorded (SQLite records it outside this transaction).
  if (flushes === undefined || !flushes.columns.some((c) => c.name === "signed_raw")) return;
  await copy(db);
  if (dialect === "postgres") await dropColumnsPostgres(db);
  else await rebuildSqlite(db);
}

export function flushTransactions(dialect: Dialect) {
  return {
    async up(db: Kysely<any>): Promise<void> {
      // As migration 040: one transaction, so a process killed midway leaves the flushes whole.
      if (db.isTransaction) await move(db, dialect);
      else await db.transaction().execute((trx) => move(trx, dialect));
    },
  };
}
