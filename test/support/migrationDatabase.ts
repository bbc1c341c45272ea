// A bare test database for a migration test: Kysely on a fresh database, migrated step by step as an upgrade would, instead of the same set-up copied into each migration test.
import SQLite from "better-sqlite3";
import { Kysely, Migrator, PostgresDialect, SqliteDialect } from "kysely";
import pg from "pg";
import { DEFAULT_CATALOG } from "../../src/domain/currencies.ts";
import type { Database } from "../../src/store/schema.ts";
import { migrations, sqlitePath } from "../../src/store/store.ts";
import { createTestDatabase, type StoreKind, storeKind } from "./server.ts";

export interface MigrationDatabase {
  readonly dialect: StoreKind;
  /** The database's URL, for a process that opens it as the service does. */
  readonly url: string;
  readonly db: Kysely<Database>;
  /** The SQLite connection, null on PostgreSQL. */
  readonly sqlite: SQLite.Database | null;
  /** Migrates up or down to `target`, or to the latest with null; a failed step throws. */
  migrateTo(target: string | null): Promise<void>;
  /** Closes the connection and drops the database. */
  close(): Promise<void>;
}

/** `foreignKeys`: on SQLite, enforce foreign keys as the store's writing connection does. */
export async function openMigrationDatabase(options: { foreignKeys?: boolean } = {}): Promise<MigrationDatabase> {
  const dialect = storeKind();
  const database = await createTestDatabase(dialect);
  const sqlite = dialect === "sqlite" ? new SQLite(sqlitePath(database.url)) : null;
  if (sqlite && options.foreignKeys) sqlite.pragma("foreign_keys = ON");
  const db = sqlite
    ? new Kysely<Database>({ dialect: new SqliteDialect({ database: sqlite }) })
    : new Kysely<Database>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: database.url }) }) });
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations(dialect) } });
  return {
    dialect,
    url: database.url,
    db,
    sqlite,
    migrateTo: async (target) => {
      const { error } = target === null ? await migrator.migrateToLatest() : await migrator.migrateTo(target);
      if (error) throw error;
    },
    close: async () => {
      await db.destroy();
      await database.drop();
    },
  };
}

/** A merchants row with only the columns every migration has had since the first: an old store's merchant. */
export function oldMerchantRow(id: string, email: string, createdAt: string) {
  return {
    id,
    email,
    merchant_name: null,
    director_name: null,
    website: null,
    logo: null,
    whitelabeling: 0,
    status: "active",
    fee_percent: "1",
    fees_paid_by: "merchant",
    callback_secret: "sealed",
    callback_secret_previous: null,
    callback_secret_rotated_at: null,
    created_at: createdAt,
    updated_at: createdAt,
  };
}

/** The default catalog as a schema before migration 043 holds it: without the entries' authorizations (product §28). */
export const CATALOG_BEFORE_043 = DEFAULT_CATALOG.map(({ authorization: _none, ...entry }) => entry);
