// The benchmark's stack floor: the least a validated, durable request can cost on this service's stack, so the service's ratios can be read against what the stack itself allows.
//
// Same framework, parser, schemas, signature check and store as the service (on SQLite the
// service's own group committer, fsync barrier and checkpoint worker), and nothing else: each POST
// validates its body (and, when signed, its signature), writes one row, waits until that row is on
// disk, and answers with as many bytes as the service does.
// GET reads one row by key. No authentication, no money rules, no ledger, no idempotency.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type SQLite from "better-sqlite3";
import Fastify from "fastify";
import pg from "pg";
import { CreateInvoiceBody } from "../src/app/createInvoice.ts";
import { CreateWithdrawalBody } from "../src/app/createWithdrawal.ts";
import {
  canonicalJson,
  checkRequestId,
  checkSignatureFormat,
  checkTimestamp,
  signatureMatches,
  signingMessage,
} from "../src/domain/signing.ts";
import { AJV_OPTIONS, acceptStrictJsonOnly } from "../src/http/app.ts";
import { openStore, type Tx } from "../src/store/store.ts";
import { type DataWriter, postgresDataWriter, sqliteDataWriter } from "./dataFloor.ts";

const port = Number(process.env.PORT ?? "0");
const getSize = Number(process.env.FLOOR_GET_BYTES ?? "800");
const postSize = Number(process.env.FLOOR_POST_BYTES ?? "800");
const secret = process.env.FLOOR_SECRET ?? "";
const databaseUrl = process.env.DATABASE_URL ?? "";

/** One row written, durably, per request; the batch it joined is answered once it is on disk. */
interface Writer {
  /** `body`: the canonical text of a signed request, or the parsed body of an unsigned one. */
  write(requestKey: string | null, body: unknown): Promise<void>;
  read(id: number): Promise<string | null>;
  close(): Promise<void>;
}

function text(body: unknown): string {
  return typeof body === "string" ? body : JSON.stringify(body);
}

const TABLE =
  "CREATE TABLE IF NOT EXISTS floor_writes (id INTEGER PRIMARY KEY, request_key TEXT UNIQUE, body TEXT NOT NULL, created_at TEXT NOT NULL)";

/**
 * SQLite through the service's own store: its group committer (a savepoint per request, the batch
 * kept open while the last fsync runs), its WAL fsync barrier and its checkpoint worker. Only the
 * work inside the transaction differs: one prepared INSERT.
 */
async function sqliteWriter(): Promise<Writer> {
  const dir = mkdtempSync(join(tmpdir(), "payments-floor-"));
  const store = await openStore(`sqlite:${join(dir, "floor.db")}`, {
    sqliteSynchronous: process.env.SQLITE_SYNCHRONOUS === "NORMAL" ? "NORMAL" : "FULL",
  });
  const writing = (tx: Tx): SQLite.Database => {
    if (!tx.sqlite) throw new Error("invariant violated: a SQLite transaction has its connection");
    return tx.sqlite;
  };
  await store.transaction(async (tx) => {
    writing(tx).exec(TABLE);
  });
  const reader = store.sqlite;
  if (!reader) throw new Error("invariant violated: a file store has a reading connection");
  const select = reader.prepare("SELECT body FROM floor_writes WHERE id = ?").pluck();
  const INSERT = "INSERT INTO floor_writes (request_key, body, created_at) VALUES (?, ?, ?)";
  return {
    write: (requestKey, body) =>
      store.transaction(async (tx) => {
        // The store caches prepared statements per connection: this is a lookup after the first.
        writing(tx).prepare(INSERT).run(requestKey, text(body), new Date().toISOString());
      }),
    read: async (id) => (select.get(id) as string | undefined) ?? null,
    close: async () => {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** PostgreSQL: one INSERT per request, committed (and fsynced by the server) on its own. */
async function postgresWriter(): Promise<Writer> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 10 });
  await pool.query(TABLE.replace("INTEGER PRIMARY KEY", "BIGSERIAL PRIMARY KEY"));
  return {
    write: async (requestKey, body) => {
      await pool.query({
        name: "floor_insert",
        text: "INSERT INTO floor_writes (request_key, body, created_at) VALUES ($1, $2, $3)",
        values: [requestKey, text(body), new Date().toISOString()],
      });
    },
    read: async (id) => {
      const result = await pool.query({
        name: "floor_select",
        text: "SELECT body FROM floor_writes WHERE id = $1",
        values: [id],
      });
      return (result.rows[0]?.body as string | undefined) ?? null;
    },
    close: () => pool.end(),
  };
}

function answer(size: number): string {
  return JSON.stringify("x".repeat(Math.max(0, size - 2)));
}

/**
 * FLOOR_KIND=data: the data floor (dataFloor.ts), which writes the rows the service's data model
 * needs for each operation instead of one small row. Otherwise the stack floor.
 */
async function openWriter(): Promise<Writer> {
  if (process.env.FLOOR_KIND === "data") {
    const data: DataWriter = databaseUrl.startsWith("postgres")
      ? await postgresDataWriter(databaseUrl)
      : await sqliteDataWriter(process.env.SQLITE_SYNCHRONOUS === "NORMAL" ? "NORMAL" : "FULL");
    return {
      write: (requestKey, body) =>
        requestKey === null
          ? data.invoice(body as { order_no?: string; description?: string })
          : data.withdrawal(requestKey, postAnswer),
      read: data.read,
      close: data.close,
    };
  }
  if (databaseUrl.startsWith("postgres")) return postgresWriter();
  return sqliteWriter();
}

const getAnswer = answer(getSize);
const postAnswer = answer(postSize);
const writer = await openWriter();

const app = Fastify({ logger: false, ajv: { customOptions: AJV_OPTIONS } });
acceptStrictJsonOnly(app);

app.get<{ Params: { id: string } }>("/public/v1/invoices/:id", async (request, reply) => {
  await writer.read(Number.parseInt(request.params.id, 16) || 1);
  return reply.type("application/json; charset=utf-8").send(getAnswer);
});

app.post("/public/v1/invoices/create", { schema: { body: CreateInvoiceBody } }, async (request, reply) => {
  await writer.write(null, request.body);
  return reply.type("application/json; charset=utf-8").send(postAnswer);
});

const WITHDRAWAL_PATH = "/public/v1/withdrawals/create";
app.post(WITHDRAWAL_PATH, { schema: { body: CreateWithdrawalBody } }, async (request, reply) => {
  const timestampSent = request.headers["x-service-timestamp"] as string | undefined;
  const timestamp = checkTimestamp(timestampSent, Date.now());
  const requestIdSent = request.headers["x-service-request-id"] as string | undefined;
  const requestId = checkRequestId(requestIdSent);
  const signature = checkSignatureFormat(request.headers["x-service-request-signature"] as string | undefined);
  const canonical = canonicalJson(request.body);
  if (!timestamp.ok || !requestId.ok || !signature.ok || !canonical.ok) {
    return reply.code(400).send({ code: "bad_signed_request" });
  }
  const message = signingMessage({
    path: WITHDRAWAL_PATH,
    timestamp: timestampSent as string,
    requestId: requestIdSent as string,
    canonicalBody: canonical.value,
  });
  if (!signatureMatches(secret, message, signature.value)) return reply.code(401).send({ code: "invalid_signature" });
  await writer.write(requestId.value, canonical.value);
  return reply.type("application/json; charset=utf-8").send(postAnswer);
});

await app.listen({ port, host: "127.0.0.1" });
const address = app.server.address();
process.stdout.write(`${JSON.stringify({ port: typeof address === "object" && address ? address.port : 0 })}\n`);
process.on("SIGTERM", () => {
  app.close().then(
    () => writer.close().then(() => process.exit(0)),
    () => process.exit(1),
  );
});
