// The benchmark's stack floor: the least a validated, durable request can cost on this service's stack, so the service's ratios can be read against what the stack itself allows.
//
// Same framework, parser, schemas, signature check, SQL driver and durability barrier as the
// service, and nothing else: each POST validates its body (and, when signed, its signature), writes
// one row, waits until that row is on disk, and answers with as many bytes as the service does.
// GET reads one row by key. No authentication, no money rules, no ledger, no idempotency.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import SQLite from "better-sqlite3";
import Fastify from "fastify";
import pg from "pg";
import {
  canonicalJson,
  checkRequestId,
  checkSignatureFormat,
  checkTimestamp,
  signatureMatches,
  signingMessage,
} from "../src/domain/signing.ts";
import { parseJsonBody } from "../src/http/app.ts";
import { CreateWithdrawalBody } from "../src/http/public/createWithdrawal.ts";
import { CreateInvoiceBody } from "../src/http/public/invoices.ts";
import { WalSync, walFileSync } from "../src/store/walSync.ts";

const port = Number(process.env.PORT ?? "0");
const getSize = Number(process.env.FLOOR_GET_BYTES ?? "800");
const postSize = Number(process.env.FLOOR_POST_BYTES ?? "800");
const secret = process.env.FLOOR_SECRET ?? "";
const databaseUrl = process.env.DATABASE_URL ?? "";
const durable = process.env.SQLITE_SYNCHRONOUS !== "NORMAL";

/** One row written, durably, per request; the batch it joined is answered once it is on disk. */
interface Writer {
  write(requestKey: string | null, body: string): Promise<void>;
  read(id: number): Promise<string | null>;
  close(): Promise<void>;
}

const TABLE =
  "CREATE TABLE IF NOT EXISTS floor_writes (id INTEGER PRIMARY KEY, request_key TEXT UNIQUE, body TEXT NOT NULL, created_at TEXT NOT NULL)";

/** SQLite as the service runs it: WAL, commits without fsync, one group commit per turn of the event loop, WalSync before answers. */
function sqliteWriter(): Writer {
  const dir = mkdtempSync(join(tmpdir(), "payments-floor-"));
  const path = join(dir, "floor.db");
  const db = new SQLite(path);
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = NORMAL");
  db.pragma("temp_store = MEMORY");
  db.exec(TABLE);
  const insert = db.prepare("INSERT INTO floor_writes (request_key, body, created_at) VALUES (?, ?, ?)");
  const select = db.prepare("SELECT body FROM floor_writes WHERE id = ?").pluck();
  const fileSync = walFileSync(path);
  let commits = 0;
  const walSync = durable ? new WalSync({ committedVersion: () => commits, sync: fileSync.sync }) : null;
  let batch: { requestKey: string | null; body: string; settle: (error?: unknown) => void }[] = [];
  const commit = () => {
    const members = batch;
    batch = [];
    db.exec("BEGIN IMMEDIATE");
    const failures = members.map((member) => {
      db.exec("SAVEPOINT member");
      try {
        insert.run(member.requestKey, member.body, new Date().toISOString());
        db.exec("RELEASE member");
        return null;
      } catch (error) {
        db.exec("ROLLBACK TO member; RELEASE member");
        return error;
      }
    });
    db.exec("COMMIT");
    commits++;
    const barrier = walSync?.barrier() ?? Promise.resolve();
    barrier.then(
      () => {
        for (const [i, member] of members.entries()) member.settle(failures[i] ?? undefined);
      },
      (error: unknown) => {
        for (const member of members) member.settle(error);
      },
    );
  };
  return {
    write: (requestKey, body) =>
      new Promise((resolve, reject) => {
        if (batch.length === 0) setImmediate(commit);
        batch.push({ requestKey, body, settle: (error) => (error === undefined ? resolve() : reject(error)) });
      }),
    read: async (id) => (select.get(id) as string | undefined) ?? null,
    close: async () => {
      db.close();
      await fileSync.close();
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
        values: [requestKey, body, new Date().toISOString()],
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

const writer = databaseUrl.startsWith("postgres") ? await postgresWriter() : sqliteWriter();
const getAnswer = answer(getSize);
const postAnswer = answer(postSize);

const app = Fastify({
  logger: false,
  ajv: { customOptions: { removeAdditional: false, coerceTypes: false, useDefaults: false, allErrors: true } },
});
app.removeAllContentTypeParsers();
app.addContentTypeParser("application/json", { parseAs: "string" }, (_request, body, done) => {
  try {
    done(null, parseJsonBody(body as string));
  } catch (error) {
    done(error as Error, undefined);
  }
});

app.get<{ Params: { id: string } }>("/public/v1/invoices/:id", async (request, reply) => {
  await writer.read(Number.parseInt(request.params.id, 16) || 1);
  return reply.type("application/json; charset=utf-8").send(getAnswer);
});

app.post("/public/v1/invoices/create", { schema: { body: CreateInvoiceBody } }, async (request, reply) => {
  await writer.write(null, JSON.stringify(request.body));
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
