// Hot queries built and compiled once per dialect, then run with new values: Kysely's building and compiling cost more than the query.
import type SQLite from "better-sqlite3";
import type { Compilable, CompiledQuery, Kysely, QueryResult } from "kysely";
import { assert } from "../domain/result.ts";
import type { Dialect } from "./dialect.ts";
import type { Database } from "./schema.ts";
import type { Tx } from "./tx.ts";

const SENTINEL = "\u0000prepared-argument:";

/** Starts the SQL of prepared queries on PostgreSQL, where the store runs them as named statements. */
export const PREPARED_MARKER = "/* prepared */ ";

interface Compiled {
  query: CompiledQuery<unknown>;
  /** SQLite: the statement prepared on each connection it ran on. */
  statements: WeakMap<SQLite.Database, SQLite.Statement>;
  /** For each compiled parameter: the argument it takes, or null for a constant of the query. */
  slots: (string | null)[];
}

/** The rows and, for writes, how many rows the statement inserted, updated or deleted. */
export interface PreparedResult<Row> {
  rows: Row[];
  affected: bigint;
}

/**
 * `build` receives placeholders in place of its arguments; the compiled SQL and the positions of
 * the placeholders are kept per dialect, and each call substitutes the real values. The SQL text
 * is identical each time, which also lets SQLite reuse its prepared statement. Arguments must be
 * values of the query (never identifiers, operators or list lengths), and a query whose shape
 * depends on its arguments needs one prepared query per shape.
 */
export function preparedStatement<Names extends string, Row>(
  names: readonly Names[],
  build: (db: Kysely<Database>, args: Record<Names, string>) => Compilable<Row>,
): (tx: Tx, args: Record<Names, unknown>) => Promise<PreparedResult<Row>> {
  const byDialect = new Map<Dialect, Compiled>();
  return async (tx, args) => {
    let compiled = byDialect.get(tx.dialect);
    if (!compiled) {
      const placeholders = Object.fromEntries(names.map((n) => [n, `${SENTINEL}${n}`])) as Record<Names, string>;
      const built = build(tx.db, placeholders).compile() as CompiledQuery<unknown>;
      const query = tx.dialect === "postgres" ? { ...built, sql: `${PREPARED_MARKER}${built.sql}` } : built;
      const slots = query.parameters.map((p) =>
        typeof p === "string" && p.startsWith(SENTINEL) ? p.slice(SENTINEL.length) : null,
      );
      for (const name of names) {
        assert(slots.includes(name), `prepared query ignores argument ${name}`);
      }
      compiled = { query, statements: new WeakMap(), slots };
      byDialect.set(tx.dialect, compiled);
    }
    const { query, slots } = compiled;
    const parameters = query.parameters.map((p, i) => {
      const slot = slots[i];
      return slot === null || slot === undefined ? p : args[slot as Names];
    });
    const connection = tx.sqlite;
    if (connection) {
      let statement = compiled.statements.get(connection);
      if (!statement) {
        statement = connection.prepare(query.sql);
        compiled.statements.set(connection, statement);
      }
      // A transaction holds the writing connection; outside one, the store's connection is query-only
      // and a write goes through Kysely to the writing connection instead.
      if (statement.readonly || connection.inTransaction) {
        if (statement.reader) return { rows: statement.all(parameters) as Row[], affected: 0n };
        return { rows: [], affected: BigInt(statement.run(parameters).changes) };
      }
    }
    const result: QueryResult<Row> = await tx.db.executeQuery<Row>({ ...query, parameters } as CompiledQuery<Row>);
    return { rows: result.rows, affected: result.numAffectedRows ?? 0n };
  };
}

/** A prepared read: only its rows. */
export function preparedQuery<Names extends string, Row>(
  names: readonly Names[],
  build: (db: Kysely<Database>, args: Record<Names, string>) => Compilable<Row>,
): (tx: Tx, args: Record<Names, unknown>) => Promise<Row[]> {
  const statement = preparedStatement(names, build);
  return async (tx, args) => (await statement(tx, args)).rows;
}

/** Types a placeholder as the column's value type, for columns that are not text. */
export function placeholder<T>(value: string): T {
  return value as unknown as T;
}
