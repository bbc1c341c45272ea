// Everything is bounded (product §17): request and header timeouts, list sizes, per-address limits; and query strings are coerced while bodies stay strict.

import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BY_ORDER_LIMIT } from "../../src/store/invoices.ts";
import { WITHDRAWAL_METHODS_PER_MERCHANT } from "../../src/store/merchants.ts";
import { invitedUser } from "../support/dashboard.ts";
import { useTestServer } from "../support/fixture.ts";
import { createInvoice } from "../support/invoices.ts";
import {
  admin,
  call,
  createMerchant,
  expectProblem,
  merchant,
  startTestServer,
  type TestServer,
} from "../support/server.ts";
import { fundedMerchant, withdraw } from "../support/withdrawals.ts";

const server = useTestServer();

/** Opens a raw connection, writes `head`, and resolves with everything the server sent once it closes the socket. */
function slowClient(baseUrl: string, head: string): { socket: Socket; closed: Promise<string> } {
  const { hostname, port } = new URL(baseUrl);
  const socket = connect(Number(port), hostname);
  socket.write(head);
  let received = "";
  socket.on("data", (chunk: Buffer) => {
    received += chunk.toString("latin1");
  });
  const closed = new Promise<string>((resolve) => {
    socket.on("close", () => resolve(received));
    socket.on("error", () => {});
  });
  return { socket, closed };
}

describe("request and header timeouts", () => {
  let timed: TestServer;
  beforeAll(async () => {
    timed = await startTestServer({
      env: { REQUEST_TIMEOUT_MS: "400", HEADERS_TIMEOUT_MS: "300", CONNECTION_TIMEOUT_MS: "5000" },
    });
  });
  afterAll(async () => {
    await timed.close();
  });

  it("cuts off a slow body with 408 and closes the socket, authenticated or not", async () => {
    const body = JSON.stringify({ email: "slow@example.com" });
    const heads = [
      // The operator's token is valid: authentication does not buy time.
      `POST /admin/v1/merchants HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${timed.adminToken}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body.slice(0, 5)}`,
      `POST /public/v1/invoices/create HTTP/1.1\r\nhost: x\r\nx-api-key: pk_nobody\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"a`,
    ];
    const clients = heads.map((head) => slowClient(timed.baseUrl, head));
    // The clients keep dripping one byte at a time, well inside any inactivity timeout.
    const drip = setInterval(() => {
      for (const { socket } of clients) if (!socket.destroyed) socket.write(" ");
    }, 50);
    try {
      const [authenticated, unknownKey] = await Promise.all(clients.map((c) => c.closed));
      expect(authenticated).toMatch(/^HTTP\/1\.1 408 /);
      // An unknown key is refused before the body is read; the connection is still cut off.
      expect(unknownKey).toMatch(/^HTTP\/1\.1 (401|408) /);
    } finally {
      clearInterval(drip);
    }
    // Nothing was created by the request that never finished.
    const found = await timed.ctx.store.db
      .selectFrom("merchants")
      .select("id")
      .where("email", "=", "slow@example.com")
      .execute();
    expect(found).toEqual([]);
  });

  it("cuts off a client that never finishes its headers", async () => {
    const client = slowClient(timed.baseUrl, "GET /public/v1/version HTTP/1.1\r\nhost: x\r\n");
    const drip = setInterval(() => {
      if (!client.socket.destroyed) client.socket.write("x-a: b\r\n");
    }, 50);
    try {
      expect(await client.closed).toMatch(/^HTTP\/1\.1 408 /);
    } finally {
      clearInterval(drip);
    }
  });

  it("still serves requests that finish in time on the same server", async () => {
    expect((await call(timed.baseUrl, "GET", "/public/v1/version")).status).toBe(200);
  });
});

describe("GetInvoicesByOrderId is bounded", () => {
  it(`answers exactly the ${BY_ORDER_LIMIT} newest invoices, newest first, when there are more`, async () => {
    const m = await createMerchant(server);
    const total = BY_ORDER_LIMIT + 25;
    const ids: string[] = [];
    for (let i = 0; i < total; i++) {
      ids.push((await createInvoice(server, m.apiKey, { currency: "USDT", amount: 100, order_no: "big" })).id);
    }
    // Distinct times, not in creation order, with ties broken by id: the order is the store's, not the insertion's.
    const base = Date.parse("2030-01-01T00:00:00.000Z");
    const times = new Map<string, string>();
    for (const [i, id] of ids.entries()) {
      const at = new Date(base + ((i * 37) % 50) * 1000).toISOString();
      times.set(id, at);
    }
    await server.ctx.store.transaction(async (tx) => {
      for (const [id, at] of times) {
        await tx.db.updateTable("invoices").set({ created_at: at }).where("id", "=", id).execute();
      }
    });
    const expected = [...times.entries()]
      .sort(([ia, a], [ib, b]) => (a !== b ? (a < b ? 1 : -1) : ia < ib ? 1 : -1))
      .slice(0, BY_ORDER_LIMIT)
      .map(([id]) => id);
    const answer = await merchant(server, m.apiKey, "GET", "/public/v1/invoices/byOrder/big");
    expect(answer.status).toBe(200);
    expect(answer.body).toHaveLength(BY_ORDER_LIMIT);
    expect(answer.body.map((i: { id: string }) => i.id)).toEqual(expected);
  });
});

describe("per-address limits", () => {
  let limited: TestServer;
  beforeAll(async () => {
    limited = await startTestServer({
      env: { ADMIN_RATE_LIMIT_PER_MINUTE: "4", UNKNOWN_KEY_RATE_LIMIT_PER_MINUTE: "3" },
    });
  });
  afterAll(async () => {
    await limited.close();
  });

  it("answers 429 with Retry-After once an address exceeds the operator API's limit, token or not", async () => {
    const headers = { authorization: `Bearer ${limited.adminToken}` };
    for (let i = 0; i < 3; i++)
      expect((await call(limited.baseUrl, "GET", "/admin/v1/currencies", { headers })).status).toBe(200);
    expectProblem(
      await call(limited.baseUrl, "GET", "/admin/v1/currencies", { headers: { authorization: "Bearer wrong-token" } }),
      401,
      "invalid_admin_token",
    );
    const refused = await call(limited.baseUrl, "GET", "/admin/v1/currencies", { headers });
    expectProblem(refused, 429, "rate_limited");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    // Guessing tokens is limited as well.
    expectProblem(
      await call(limited.baseUrl, "GET", "/admin/v1/currencies", { headers: { authorization: "Bearer guess-token" } }),
      429,
      "rate_limited",
    );
  });

  it("answers 429 to unknown API keys from an address over its limit, while a valid key keeps working", async () => {
    // The demo merchant's key: creating a merchant would spend the operator API's budget of this address.
    const m = limited.demo.apiKey;
    for (let i = 0; i < 3; i++) {
      expectProblem(await merchant(limited, `pk_guess${i}`, "GET", "/public/v1/me"), 401, "invalid_api_key");
    }
    const refused = await merchant(limited, "pk_guess9", "GET", "/public/v1/me");
    expectProblem(refused, 429, "rate_limited");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expectProblem(await merchant(limited, "x".repeat(300), "GET", "/public/v1/me"), 429, "rate_limited");
    for (let i = 0; i < 5; i++) expect((await merchant(limited, m, "GET", "/public/v1/me")).status).toBe(200);
  });
});

describe("query strings are coerced, bodies are not", () => {
  it("lists payouts with ?limit=N and ?state=", async () => {
    const m = await fundedMerchant(server);
    for (let i = 0; i < 3; i++) expect((await withdraw(server, m)).answer.status).toBe(200);
    const limited = await admin(server, "GET", "/payouts?limit=2");
    expect(limited.status).toBe(200);
    expect(limited.body).toHaveLength(2);
    const queued = await admin(server, "GET", "/payouts?state=queued&limit=500");
    expect(queued.status).toBe(200);
    expect(queued.body.length).toBeGreaterThanOrEqual(3);
    expectProblem(await admin(server, "GET", "/payouts?limit=0"), 400, "validation_failed");
    expectProblem(await admin(server, "GET", "/payouts?limit=501"), 400, "validation_failed");
    expectProblem(await admin(server, "GET", "/payouts?limit=two"), 400, "validation_failed");
    expectProblem(await admin(server, "GET", "/payouts?limit=1.5"), 400, "validation_failed");
    expectProblem(await admin(server, "GET", "/payouts?other=1"), 400, "validation_failed");
  });

  it("accepts every documented integer query parameter written as digits", async () => {
    const doc = (await call(server.baseUrl, "GET", "/openapi.json")).body as {
      paths: Record<string, Record<string, { parameters?: { in: string; name: string; schema: any }[] }>>;
    };
    let checked = 0;
    // The dashboard's lists are read with a session (any role reads).
    const viewer = await invitedUser(server, server.demo.merchantId, "viewer");
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        for (const parameter of operation.parameters ?? []) {
          if (parameter.in !== "query" || parameter.schema?.type !== "integer" || path.includes("{")) continue;
          const value = parameter.schema.minimum ?? 1;
          const headers: Record<string, string> = path.startsWith("/admin/")
            ? { authorization: `Bearer ${server.adminToken}` }
            : path.startsWith("/dashboard/")
              ? { cookie: viewer.cookie }
              : { "x-api-key": server.demo.apiKey };
          const answer = await call(server.baseUrl, method.toUpperCase(), `${path}?${parameter.name}=${value}`, {
            headers,
          });
          expect(answer.status, `${method} ${path}?${parameter.name}=${value}: ${answer.text}`).toBe(200);
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(0);
  });

  it("still refuses a number written as a string in a body", async () => {
    const answer = await admin(server, "POST", "/merchants", { email: "strict@example.com", whitelabeling: "true" });
    expectProblem(answer, 400, "validation_failed");
    const fee = await admin(server, "POST", "/merchants", { email: "strict@example.com", feePercent: true });
    expectProblem(fee, 400, "validation_failed");
  });
});

describe("withdrawal methods per merchant are bounded", () => {
  it(`refuses a merchant's method beyond ${WITHDRAWAL_METHODS_PER_MERCHANT} with 409, and lists at most that many`, async () => {
    const m = await createMerchant(server);
    const add = (i: number) =>
      admin(server, "POST", `/merchants/${m.id}/withdrawal-methods`, {
        currency: "USDT",
        address: `0x${String(i).padStart(40, "0")}`,
      });
    for (let i = 0; i < WITHDRAWAL_METHODS_PER_MERCHANT - 4; i++) expect((await add(i)).status).toBe(200);
    // The last few concurrently: the bound holds under races too.
    const racing = await Promise.all(Array.from({ length: 10 }, (_, i) => add(1000 + i)));
    expect(racing.filter((a) => a.status === 200)).toHaveLength(4);
    for (const answer of racing.filter((a) => a.status !== 200))
      expectProblem(answer, 409, "withdrawal_method_limit_reached");
    const listed = await admin(server, "GET", `/merchants/${m.id}/withdrawal-methods`);
    expect(listed.body).toHaveLength(WITHDRAWAL_METHODS_PER_MERCHANT);
  });
});
