// `npm run test:crash`: signed withdrawals and refunds with safe retries while the service is SIGKILLed and restarted; then every invariant is checked in the store.
// `npm run test:crash:pg-faults` (CRASH_PG_FAULTS=1, PostgreSQL): the same load while the service's database backends are terminated again and again; the process must never die.
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { sql } from "kysely";
import pg from "pg";
import { auditLedger } from "../../src/store/ledger.ts";
import { openStore } from "../../src/store/store.ts";
import { PAYOUT_LEASE_MS } from "../../src/workers/payouts.ts";
import { type ServiceProcess, spawnService } from "../support/process.ts";
import { createTestDatabase, freePort } from "../support/server.ts";
import { jcs, signedCall } from "../support/signing.ts";

const KILLS = Number(process.env.CRASH_KILLS ?? "6");
const WITHDRAWALS = Number(process.env.CRASH_WITHDRAWALS ?? "600");
const REFUNDS = Number(process.env.CRASH_REFUNDS ?? "24");
const CONCURRENCY = 8;
/** Bound on attempts per logical operation; a retry loop without one could hide a hang. */
const MAX_ATTEMPTS = 400;
const ADMIN_TOKEN = `crash-${randomBytes(12).toString("hex")}`;
const SECRET_ENCRYPTION_KEY = randomBytes(32).toString("hex");
/** Fault mode: terminate the service's PostgreSQL backends during the load instead of killing the process. */
const PG_FAULTS = process.env.CRASH_PG_FAULTS === "1";
const POSTGRES_URL =
  process.env.TEST_POSTGRES_URL ??
  (process.env.DATABASE_URL?.startsWith("postgres")
    ? process.env.DATABASE_URL
    : "postgres://postgres@127.0.0.1:5432/test");

interface Operation {
  requestId: string;
  path: string;
  body: Record<string, unknown>;
  /** Minor units debited when accepted (USDT, 6 decimals). */
  debitMinor: bigint;
  kind: "withdrawal" | "refund";
  attempts: number;
  outcome: "accepted" | "refused" | "pending";
  /** Every 200 answer's text: all must be identical. */
  answers: string[];
  refusal?: string;
}

function fail(message: string): never {
  throw new Error(`INVARIANT BROKEN: ${message}`);
}

async function main(): Promise<void> {
  if (PG_FAULTS) process.env.TEST_POSTGRES_URL = POSTGRES_URL;
  const database = await createTestDatabase(
    PG_FAULTS || process.env.DATABASE_URL?.startsWith("postgres") ? "postgres" : "sqlite",
  );
  const port = await freePort();
  const env = {
    DATABASE_URL: database.url,
    ADMIN_TOKEN,
    SECRET_ENCRYPTION_KEY,
    RATE_LIMIT_PER_MINUTE: "0",
    ADMIN_RATE_LIMIT_PER_MINUTE: "0",
    PAYER_RATE_LIMIT_PER_MINUTE: "0",
    WEBHOOK_RATE_LIMIT_PER_MINUTE: "0",
    LOG_LEVEL: "error",
    SERVICE_MODE: "sandbox",
    SANDBOX_PAYOUT_DELAY_MS: "150",
  };
  // A generous bound on each start: on a loaded machine a start takes tens of seconds.
  const READY_TIMEOUT_MS = 180_000;
  let service: ServiceProcess = await spawnService(env, port, READY_TIMEOUT_MS);
  const base = service.baseUrl;
  const startedAt = Date.now();
  const figures = {
    kills: 0,
    terminations: 0,
    terminatedBackends: 0,
    requests: 0,
    retries: 0,
    networkErrors: 0,
    conflictsInFlight: 0,
    unavailable: 0,
  };
  // Fault mode: the first process must live through the whole run.
  let died: number | null | undefined;
  if (PG_FAULTS) void service.exited.then((code) => (died = code));

  const adminCall = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${base}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
    return response.json() as Promise<any>;
  };

  // Setup, before any kill: a funded merchant, a withdrawal method, completed invoices to refund.
  const merchant = await adminCall("POST", "/merchants", { email: "crash@example.com" });
  const key = await adminCall("POST", `/merchants/${merchant.id}/api-keys`, {});
  const method = await adminCall("POST", `/merchants/${merchant.id}/withdrawal-methods`, {
    currency: "USDT",
    address: "0xcrash",
  });
  // Less than all withdrawals together (about 30 USDT each), so the last ones are refused for the balance.
  const fundsUsdt = Math.floor(WITHDRAWALS * 30 * 0.85);
  const fundsMinor = BigInt(fundsUsdt) * 1_000_000n;
  await adminCall("POST", `/merchants/${merchant.id}/balance-adjustments`, {
    currency: "USDT",
    amount: String(fundsUsdt),
    memo: "crash test funds",
  });
  const merchantHeaders = { "x-api-key": key.apiKey as string, "content-type": "application/json" };
  const invoiceIds: string[] = [];
  for (let i = 0; i < REFUNDS; i++) {
    const created = await fetch(`${base}/public/v1/invoices/create`, {
      method: "POST",
      headers: merchantHeaders,
      body: JSON.stringify({ currency: "USDT", amount: "20", order_no: `crash-${i}` }),
    }).then((r) => r.json() as Promise<any>);
    const paid = await fetch(`${base}/sandbox/v1/invoices/${created.id}/payments`, {
      method: "POST",
      headers: merchantHeaders,
      body: JSON.stringify({ fromAddress: `0xpayer${i}` }),
    }).then((r) => r.json() as Promise<any>);
    if (paid.status !== "completed") throw new Error(`setup: invoice ${created.id} is ${paid.status}`);
    invoiceIds.push(created.id);
  }

  const operations: Operation[] = [];
  for (let i = 0; i < WITHDRAWALS; i++) {
    const amount = 10 + (i % 41);
    operations.push({
      requestId: randomUUID(),
      path: "/public/v1/withdrawals/create",
      body: { currency: "USDT", amount: String(amount), withdrawalMethodId: method.id },
      debitMinor: BigInt(amount) * 1_000_000n,
      kind: "withdrawal",
      attempts: 0,
      outcome: "pending",
      answers: [],
    });
  }
  for (const invoiceId of invoiceIds) {
    operations.push({
      requestId: randomUUID(),
      path: "/public/v1/refunds/refundCrypto",
      body: { invoiceId, withdrawToSameAddress: true },
      debitMinor: 20_000_000n, // paid_amount of a 20 USDT invoice, settled in USDT
      kind: "refund",
      attempts: 0,
      outcome: "pending",
      answers: [],
    });
  }
  // Interleave refunds among the withdrawals.
  operations.sort(() => Math.random() - 0.5);

  let killing = true;
  const terminator = new pg.Client({ connectionString: POSTGRES_URL });
  terminator.on("error", () => {});
  if (PG_FAULTS) await terminator.connect();
  const databaseName = new URL(database.url).pathname.slice(1);
  const killer = (async () => {
    // Fault mode: every backend of the service's database is terminated, again and again, while
    // the load runs (a database restart or failover, as the process sees it).
    while (PG_FAULTS && killing) {
      await new Promise((resolve) => setTimeout(resolve, 150 + Math.random() * 450));
      if (!killing) break;
      const result = await terminator.query(
        "select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()",
        [databaseName],
      );
      figures.terminations++;
      figures.terminatedBackends += result.rowCount ?? 0;
    }
    for (let k = 0; k < KILLS && killing && !PG_FAULTS; k++) {
      await new Promise((resolve) => setTimeout(resolve, 150 + Math.random() * 450));
      if (!killing) break;
      service.child.kill("SIGKILL");
      await service.exited;
      figures.kills++;
      // Down for a moment: clients see refused connections and must retry.
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 300));
      service = await spawnService(env, port, READY_TIMEOUT_MS);
    }
  })();

  const run = async (op: Operation) => {
    const seen = new Map<string, number>();
    while (op.attempts < MAX_ATTEMPTS) {
      op.attempts++;
      figures.requests++;
      if (op.attempts > 1) figures.retries++;
      let status: number;
      let text: string;
      let code: string | undefined;
      try {
        // The same request id and body every time; a fresh timestamp and signature each attempt.
        const { answer } = await signedCall(base, {
          apiKey: key.apiKey,
          secret: key.secretKey,
          path: op.path,
          body: op.body,
          requestId: op.requestId,
        });
        status = answer.status;
        text = answer.text;
        code = typeof answer.body === "object" ? (answer.body as { code?: string }).code : undefined;
        seen.set(`${status} ${code ?? ""}`, (seen.get(`${status} ${code ?? ""}`) ?? 0) + 1);
      } catch {
        seen.set("network error", (seen.get("network error") ?? 0) + 1);
        // Fault mode: nothing restarts the service, so a dead process is the failure itself.
        if (PG_FAULTS && died !== undefined)
          fail(
            `the service process died (exit ${died}) while its backends were terminated:\n${service.output().slice(-2000)}`,
          );
        figures.networkErrors++;
        // The service is down or starting: on a loaded machine a restart takes tens of seconds,
        // which 400 attempts 50 ms apart did not cover.
        await new Promise((resolve) => setTimeout(resolve, 250));
        continue;
      }
      if (status === 200) {
        op.answers.push(text);
        op.outcome = "accepted";
        // Some payouts fail at the processor: their debit must come back, once.
        if (op.answers.length === 1 && Math.random() < 0.1) {
          await fetch(`${base}/sandbox/v1/payouts/${op.requestId}/outcome`, {
            method: "POST",
            headers: merchantHeaders,
            body: JSON.stringify({ status: "failed" }),
          }).catch(() => undefined);
        }
        // Ask again now and then: a replay must be the same bytes.
        if (op.answers.length < 2 && Math.random() < 0.3) continue;
        return;
      }
      if (status === 409 && (code === "request_in_progress" || code === "request_needs_reconciliation")) {
        figures.conflictsInFlight++;
        await new Promise((resolve) => setTimeout(resolve, 50));
        continue;
      }
      if (status === 503) {
        figures.unavailable++;
        await new Promise((resolve) => setTimeout(resolve, 50));
        continue;
      }
      if (status === 400 && op.outcome !== "accepted") {
        op.outcome = "refused";
        op.refusal = code;
        return;
      }
      fail(`${op.kind} ${op.requestId} answered ${status} ${text}`);
    }
    fail(
      `${op.kind} ${op.requestId} did not resolve in ${MAX_ATTEMPTS} attempts (${[...seen].map(([k, n]) => `${k}: ${n}`).join(", ")})`,
    );
  };

  const queue = [...operations];
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let op = queue.shift(); op; op = queue.shift()) {
        await run(op);
        // A steady pace, so the kills land in the middle of the traffic rather than after it.
        await new Promise((resolve) => setTimeout(resolve, 40));
      }
    }),
  );
  killing = false;
  await killer;
  await terminator.end().catch(() => {});
  if (PG_FAULTS) {
    if (died !== undefined || service.child.exitCode !== null || service.child.signalCode !== null)
      fail(`the service process died (exit ${died}) while its backends were terminated:\n${service.output()}`);
    if (figures.terminatedBackends === 0) fail("no backend was ever terminated: the run proves nothing");
    if (figures.unavailable === 0) fail("no request met a terminated connection (no 503): the run proves nothing");
  } else if (figures.kills === 0) fail("the service was never killed: the run proves nothing");

  // Let every payout settle, then stop the last process cleanly. A payout a killed process had
  // claimed waits for its claim's lease to run out; then the sandbox processor is asked about it
  // (it knows every payout by its id), so the wait is bounded by the lease and a margin.
  const store = await openStore(database.url);
  try {
    const settleBy = Date.now() + PAYOUT_LEASE_MS + 30_000;
    while (Date.now() < settleBy) {
      const open = await store.db
        .selectFrom("payouts")
        .select(sql<number>`count(*)`.as("n"))
        .where("state", "in", ["queued", "sending", "sent"])
        .executeTakeFirstOrThrow();
      if (Number(open.n) === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await service.stop();

    // 1. Every id that got a 200 exists exactly once, with the body that was sent, and every replay was the same bytes.
    const accepted = operations.filter((o) => o.outcome === "accepted");
    const refused = operations.filter((o) => o.outcome === "refused");
    for (const op of operations) {
      if (op.outcome === "pending") fail(`${op.requestId} never resolved`);
      if (new Set(op.answers).size > 1) fail(`${op.requestId} was answered with different bodies`);
      const rows = await store.db
        .selectFrom("signed_requests")
        .selectAll()
        .where("request_id", "=", op.requestId.toLowerCase())
        .execute();
      if (op.outcome === "accepted") {
        if (rows.length !== 1) fail(`${op.requestId}: ${rows.length} signed request rows`);
        const expectedHash = createHash("sha256").update(jcs(op.body), "utf8").digest("hex");
        if (rows[0]?.body_hash !== expectedHash) fail(`${op.requestId}: stored body differs from the one sent`);
        if (rows[0]?.response_body !== op.answers[0]) fail(`${op.requestId}: stored response differs from the answer`);
        const parsed = JSON.parse(op.answers[0] ?? "{}");
        if (parsed.request?.id !== op.requestId) fail(`${op.requestId}: request.id is ${parsed.request?.id}`);
      } else if (rows.some((r) => r.state === "completed")) {
        fail(`${op.requestId} was refused but has a completed record`);
      }
    }

    // 2. Each retried id resolved to one operation: one debit movement per accepted id, none for refused ones.
    const debits = await store.db
      .selectFrom("ledger_movements")
      .select(["cause", "cause_id"])
      .where("kind", "=", "debit")
      .execute();
    const debitCount = new Map<string, number>();
    for (const d of debits) debitCount.set(d.cause_id, (debitCount.get(d.cause_id) ?? 0) + 1);
    for (const op of accepted) {
      if (debitCount.get(op.requestId.toLowerCase()) !== 1)
        fail(`${op.requestId}: ${debitCount.get(op.requestId.toLowerCase()) ?? 0} debits`);
    }
    for (const op of refused) {
      if (debitCount.has(op.requestId.toLowerCase())) fail(`${op.requestId} was refused but debited`);
    }
    if (debits.length !== accepted.length)
      fail(`${debits.length} debit movements for ${accepted.length} accepted operations`);

    // 3. The ledger sums to zero per currency, cached balances match their entries, nothing is negative.
    const audit = await auditLedger(store);
    for (const [currency, sum] of audit.sumsByCurrency) if (sum !== 0n) fail(`ledger sums to ${sum} in ${currency}`);
    if (audit.mismatchedBalances.length > 0)
      fail(
        `balances disagree with entries: ${JSON.stringify(audit.mismatchedBalances, (_k, v) => (typeof v === "bigint" ? String(v) : v))}`,
      );
    if (audit.negativeMerchantBalances.length > 0) fail("a merchant balance is negative");

    // 4. The sum of debits equals the sum of accepted operations; the balance is funds minus what stayed paid out.
    const merchantAccount = `merchant:${merchant.id}`;
    const debitEntries = await store.db
      .selectFrom("ledger_entries")
      .innerJoin("ledger_movements", "ledger_movements.id", "ledger_entries.movement_id")
      .select(["ledger_entries.amount", "ledger_movements.kind"])
      .where("ledger_entries.account", "=", merchantAccount)
      .where("ledger_entries.currency", "=", "USDT")
      .execute();
    const debitedMinor = debitEntries.filter((e) => e.kind === "debit").reduce((s, e) => s - BigInt(e.amount), 0n);
    const acceptedMinor = accepted.reduce((s, o) => s + o.debitMinor, 0n);
    if (debitedMinor !== acceptedMinor) fail(`debited ${debitedMinor} but accepted ${acceptedMinor}`);

    // 5. No payout is done twice: one payout per accepted operation, each handed to the processor at most once.
    const payouts = await store.db.selectFrom("payouts").selectAll().execute();
    if (payouts.length !== accepted.length)
      fail(`${payouts.length} payouts for ${accepted.length} accepted operations`);
    const perId = new Set(payouts.map((p) => p.request_id));
    if (perId.size !== payouts.length) fail("two payouts share a request id");
    for (const p of payouts) if (p.attempts > 1) fail(`payout ${p.request_id} was handed over ${p.attempts} times`);
    const txIds = payouts.map((p) => p.processor_tx_id).filter((t): t is string => t !== null);
    if (new Set(txIds).size !== txIds.length) fail("two payouts share a processor transaction id");
    const reversals = await store.db
      .selectFrom("ledger_movements")
      .select("cause_id")
      .where("kind", "=", "reversal")
      .execute();
    for (const r of reversals) {
      const payout = payouts.find((p) => p.request_id === r.cause_id);
      if (payout?.state !== "failed") fail(`reversal of ${r.cause_id} whose payout is ${payout?.state}`);
    }
    const states = new Map<string, number>();
    for (const p of payouts) states.set(p.state, (states.get(p.state) ?? 0) + 1);
    // 6. Nothing waits for an operator, and nothing is left open: every sandbox payout settled.
    const unsettled = payouts.filter((p) => p.state !== "completed" && p.state !== "failed");
    if (unsettled.length > 0)
      fail(
        `${unsettled.length} payouts did not settle (${[...states].map(([s, n]) => `${s} ${n}`).join(", ")}); e.g. ${unsettled[0]?.request_id}: ${unsettled[0]?.last_error}`,
      );
    const balance = await store.db
      .selectFrom("ledger_balances")
      .select("balance")
      .where("account", "=", merchantAccount)
      .where("currency", "=", "USDT")
      .executeTakeFirstOrThrow();

    process.stdout.write(
      [
        `crash test${PG_FAULTS ? " (PostgreSQL faults)" : ""} on ${store.dialect}: passed in ${((Date.now() - startedAt) / 1000).toFixed(1)} s`,
        PG_FAULTS
          ? `  backend terminations: ${figures.terminations} rounds, ${figures.terminatedBackends} backends; the process never died`
          : `  kills (SIGKILL + restart): ${figures.kills}`,
        `  logical operations: ${operations.length} (${WITHDRAWALS} withdrawals, ${REFUNDS} refunds); accepted ${accepted.length}, refused ${refused.length} (${[...new Set(refused.map((o) => o.refusal))].join(", ") || "none"})`,
        `  HTTP requests: ${figures.requests}; retries ${figures.retries} (network errors ${figures.networkErrors}, 409 in flight/reconciliation ${figures.conflictsInFlight}, 503 ${figures.unavailable})`,
        `  debited ${debitedMinor} = accepted ${acceptedMinor} minor units; funds ${fundsMinor}; balance now ${balance.balance}`,
        `  payouts: ${[...states].map(([s, n]) => `${s} ${n}`).join(", ")}; reversals ${reversals.length}`,
        `  ledger: ${audit.movements} movements, ${audit.entries} entries, sums zero in ${[...audit.sumsByCurrency.keys()].join(", ")}`,
        "  invariants checked: one record and one debit per accepted id with the body sent; identical replays; none for refused ids;",
        "    ledger zero per currency, balances = entries, none negative; debits = accepted; one payout per operation, handed over at most once; reversals only for failed payouts;",
        "    every payout settled (none waits for an operator: interrupted hand-overs are asked of the sandbox processor)",
        "",
      ].join("\n"),
    );
  } finally {
    await store.close();
    if (service.child.exitCode === null) service.child.kill("SIGKILL");
    await database.drop();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
