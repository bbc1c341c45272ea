// A database that fails under load (terminated backends, refused connections, a locked SQLite file) fails requests with 503 store_unavailable, never the process, and leaves nothing half written.
import { randomUUID } from "node:crypto";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import SQLite from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sqlitePath } from "../../src/store/store.ts";
import { useTestServer } from "../support/fixture.ts";
import { type ServiceProcess, spawnServiceLike } from "../support/process.ts";
import { call, expectProblem, startTestServer, storeKind } from "../support/server.ts";
import { type SignedCall, signedCall } from "../support/signing.ts";
import {
  balanceOf,
  expectLedgerBalanced,
  type FundedMerchant,
  fundedMerchant,
  withdraw,
} from "../support/withdrawals.ts";

const server = useTestServer();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * /readyz's status once the service had a bounded moment to notice terminated backends: a backend
 * told to terminate dies a little later, so a query started in between still meets it.
 */
async function readyzWithin(baseUrl: string, boundMs = 5000): Promise<number> {
  const until = Date.now() + boundMs;
  for (;;) {
    const status = (await call(baseUrl, "GET", "/readyz")).status;
    if (status === 200 || Date.now() >= until) return status;
    await sleep(50);
  }
}

/** Each accepted id has exactly one debit, one withdrawal, one completed signed request; the balance is funds minus them. */
async function expectOneOperationPerAcceptedId(m: FundedMerchant, acceptedIds: string[], fundsUsdt: number) {
  const db = server.ctx.store.db;
  const keys = acceptedIds.map((id) => id.toLowerCase());
  const debits = await db
    .selectFrom("ledger_movements")
    .select("cause_id")
    .where("kind", "=", "debit")
    .where("cause_id", "in", keys)
    .execute();
  const withdrawals = await db.selectFrom("withdrawals").select("request_id").where("request_id", "in", keys).execute();
  const records = await db
    .selectFrom("signed_requests")
    .select("request_id")
    .where("request_id", "in", keys)
    .where("state", "=", "completed")
    .execute();
  expect(debits.map((d) => d.cause_id).sort()).toEqual([...keys].sort());
  expect(withdrawals.map((w) => w.request_id).sort()).toEqual([...keys].sort());
  expect(records.map((r) => r.request_id).sort()).toEqual([...keys].sort());
  // Every debit of this merchant belongs to an accepted id: nothing half written by a failed request.
  const allDebits = await db
    .selectFrom("ledger_entries")
    .innerJoin("ledger_movements", "ledger_movements.id", "ledger_entries.movement_id")
    .select("ledger_movements.cause_id")
    .where("ledger_entries.account", "=", `merchant:${m.id}`)
    .where("ledger_movements.kind", "=", "debit")
    .execute();
  expect(allDebits.length).toBe(keys.length);
  expect(await balanceOf(server, m.id)).toBe(String(fundsUsdt - 10 * keys.length));
  await expectLedgerBalanced(server);
}

if (storeKind() === "postgres") {
  describe("PostgreSQL: lost connections", () => {
    let child: ServiceProcess;
    let adminClient: pg.Client;
    const databaseName = () => new URL(server.database.url).pathname.slice(1);
    beforeAll(async () => {
      child = await spawnServiceLike(server, { SANDBOX_PAYOUT_DELAY_MS: "0" });
      // Connected to the shared maintenance database, so terminating this test's database spares it.
      adminClient = new pg.Client({
        connectionString: process.env.TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/test",
      });
      adminClient.on("error", () => {});
      await adminClient.connect();
    }, 240_000);
    afterAll(async () => {
      await adminClient?.query(`ALTER DATABASE ${databaseName()} WITH ALLOW_CONNECTIONS true`).catch(() => {});
      await adminClient?.end();
      await child?.stop();
    });

    const terminateAll = async (): Promise<number> => {
      const result = await adminClient.query(
        "select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()",
        [databaseName()],
      );
      return result.rowCount ?? 0;
    };

    it("survives terminated backends under signed withdrawals: 503 or success, then one operation per id", async () => {
      const funds = 100_000;
      const m = await fundedMerchant(server, String(funds));
      const targets = [server.baseUrl, child.baseUrl];
      const calls: { requestId: string; first: SignedCall }[] = [];
      let loading = true;
      let terminated = 0;
      const terminator = (async () => {
        while (loading) {
          await sleep(20 + Math.random() * 60);
          terminated += await terminateAll();
        }
      })();
      try {
        await Promise.all(
          Array.from({ length: 8 }, async (_, worker) => {
            for (let i = 0; i < 25; i++) {
              const requestId = randomUUID();
              const first = await signedCall(targets[(worker + i) % targets.length] ?? server.baseUrl, {
                apiKey: m.apiKey,
                secret: m.secretKey,
                body: { currency: "USDT", amount: "10", withdrawalMethodId: m.methodId },
                requestId,
              });
              calls.push({ requestId, first });
            }
          }),
        );
      } finally {
        loading = false;
        await terminator;
      }
      expect(terminated).toBeGreaterThan(0);
      // The process is still up.
      expect(child.child.exitCode).toBeNull();
      expect(child.child.signalCode).toBeNull();

      const failed = calls.filter((c) => c.first.answer.status !== 200);
      for (const c of failed) expectProblem(c.first.answer, 503, "store_unavailable");
      expect(failed.length).toBeGreaterThan(0);

      // Later requests succeed; a retry with the same id is the original answer, or the operation once.
      for (const target of targets) expect(await readyzWithin(target)).toBe(200);
      for (const c of calls) {
        const retry = await withdraw({ ...server, baseUrl: child.baseUrl }, m, {}, { requestId: c.requestId });
        expect(retry.answer.status).toBe(200);
        if (c.first.answer.status === 200) expect(retry.answer.text).toBe(c.first.answer.text);
      }
      await expectOneOperationPerAcceptedId(
        m,
        calls.map((c) => c.requestId),
        funds,
      );
    }, 400_000);

    it("answers /readyz 503 while the database refuses connections, 200 once it is back; requests meanwhile change nothing", async () => {
      const m = await fundedMerchant(server, "100");
      await adminClient.query(`ALTER DATABASE ${databaseName()} WITH ALLOW_CONNECTIONS false`);
      try {
        for (let round = 0; round < 3; round++) await terminateAll();
        for (const target of [server.baseUrl, child.baseUrl]) {
          const ready = await call(target, "GET", "/readyz");
          expect(ready.status).toBe(503);
        }
        const requestId = randomUUID();
        const refused = await withdraw({ ...server, baseUrl: child.baseUrl }, m, {}, { requestId });
        expectProblem(refused.answer, 503, "store_unavailable");
        const refusedInProcess = await withdraw(server, m, {}, { requestId: randomUUID() });
        expectProblem(refusedInProcess.answer, 503, "store_unavailable");
        expect(child.child.exitCode).toBeNull();
      } finally {
        await adminClient.query(`ALTER DATABASE ${databaseName()} WITH ALLOW_CONNECTIONS true`);
      }
      for (const target of [server.baseUrl, child.baseUrl]) expect(await readyzWithin(target)).toBe(200);
      expect(await balanceOf(server, m.id)).toBe("100");
      const requestId = randomUUID();
      const accepted = await withdraw({ ...server, baseUrl: child.baseUrl }, m, {}, { requestId });
      expect(accepted.answer.status).toBe(200);
      await expectOneOperationPerAcceptedId(m, [requestId], 100);
      expect(child.child.exitCode).toBeNull();
    }, 240_000);
  });
}

/** A TCP relay to PostgreSQL that a test can cut (every link at once) or make refuse new connections. */
async function startRelay(target: URL): Promise<{ url: string; cut(): void; refuse: boolean; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const relay = {
    url: "",
    refuse: false,
    cut: () => {
      for (const socket of sockets) socket.destroy();
      sockets.clear();
    },
    close: async () => {
      relay.cut();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server: Server = createServer((client) => {
    if (relay.refuse) {
      client.destroy();
      return;
    }
    const upstream = createConnection({ host: target.hostname, port: Number(target.port || 5432) });
    for (const [a, b] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      sockets.add(a);
      a.on("error", () => b.destroy());
      a.on("close", () => {
        sockets.delete(a);
        b.destroy();
      });
      a.pipe(b);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no relay port");
  const url = new URL(target);
  url.hostname = "127.0.0.1";
  url.port = String(address.port);
  relay.url = url.toString();
  return relay;
}

if (storeKind() === "postgres") {
  describe("PostgreSQL: cut TCP links", () => {
    it("answers 503 on cut links, /readyz 503 while connections are refused, and recovers with one operation per id", async () => {
      const relay = await startRelay(new URL(server.database.url));
      const viaRelay = await startTestServer({ database: { url: relay.url, drop: async () => {} } });
      try {
        const funds = 10_000;
        const m = await fundedMerchant(server, String(funds));
        const calls: { requestId: string; first: SignedCall }[] = [];
        let loading = true;
        const cutter = (async () => {
          while (loading) {
            await sleep(20 + Math.random() * 60);
            relay.cut();
          }
        })();
        try {
          await Promise.all(
            Array.from({ length: 6 }, async () => {
              for (let i = 0; i < 10; i++) {
                const requestId = randomUUID();
                calls.push({ requestId, first: await withdraw(viaRelay, m, {}, { requestId }) });
              }
            }),
          );
        } finally {
          loading = false;
          await cutter;
        }
        const failed = calls.filter((c) => c.first.answer.status !== 200);
        for (const c of failed) expectProblem(c.first.answer, 503, "store_unavailable");
        expect(failed.length).toBeGreaterThan(0);

        // The link is down: new connections are refused.
        relay.refuse = true;
        relay.cut();
        expect((await call(viaRelay.baseUrl, "GET", "/readyz")).status).toBe(503);
        const refusedId = randomUUID();
        expectProblem((await withdraw(viaRelay, m, {}, { requestId: refusedId })).answer, 503, "store_unavailable");

        // Back: readiness and requests recover without a restart; retries are the original answer or the operation once.
        relay.refuse = false;
        expect(await readyzWithin(viaRelay.baseUrl)).toBe(200);
        for (const c of [...calls, { requestId: refusedId, first: null }]) {
          const retry = await withdraw(viaRelay, m, {}, { requestId: c.requestId });
          expect(retry.answer.status).toBe(200);
          if (c.first?.answer.status === 200) expect(retry.answer.text).toBe(c.first.answer.text);
        }
        await expectOneOperationPerAcceptedId(m, [...calls.map((c) => c.requestId), refusedId], funds);
      } finally {
        await viaRelay.close();
        await relay.close();
      }
    }, 400_000);
  });
}

if (storeKind() === "sqlite") {
  describe("SQLite: a database file locked by another process", () => {
    it("answers 503 store_unavailable when the write lock cannot be had, and succeeds once it is released", async () => {
      const m = await fundedMerchant(server, "100");
      // Another connection holds the write lock longer than the store's busy timeout.
      const other = new SQLite(sqlitePath(server.database.url));
      other.pragma("busy_timeout = 5000");
      other.exec("begin immediate");
      try {
        const blocked = await withdraw(server, m, {}, { requestId: randomUUID() });
        expectProblem(blocked.answer, 503, "store_unavailable");
      } finally {
        other.exec("rollback");
        other.close();
      }
      expect(await balanceOf(server, m.id)).toBe("100");
      const requestId = randomUUID();
      const accepted = await withdraw(server, m, {}, { requestId });
      expect(accepted.answer.status).toBe(200);
      await expectOneOperationPerAcceptedId(m, [requestId], 100);
    }, 30_000);
  });
}
