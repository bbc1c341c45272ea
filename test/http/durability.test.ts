// Answers wait for the fsync: while a commit is not on disk, no answer (even a read) leaves the process.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, createTestDatabase, startTestServer, type TestServer } from "../support/server.ts";

let server: TestServer;
let release: () => void = () => {};
let holding = false;
beforeAll(async () => {
  // SQLite only: PostgreSQL commits are durable when they return.
  server = await startTestServer({
    database: await createTestDatabase("sqlite"),
    store: {
      walSync: async (sync) => {
        if (holding) await new Promise<void>((resolve) => (release = resolve));
        await sync();
      },
    },
  });
});
afterAll(async () => {
  release();
  await server.close();
});

describe("durable answers", () => {
  it("holds a write's answer and a read's answer until the fsync after the write completes", async () => {
    holding = true;
    const order: string[] = [];
    const write = fetch(`${server.baseUrl}/public/v1/invoices/create`, {
      method: "POST",
      headers: { "x-api-key": server.demo.apiKey, "content-type": "application/json" },
      body: JSON.stringify({ currency: "USDT", amount: "10" }),
    }).then((r) => {
      order.push("write");
      return r.status;
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const read = call(server.baseUrl, "GET", "/public/v1/currencies").then((r) => {
      order.push("read");
      return r.status;
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(order).toEqual([]);
    holding = false;
    release();
    expect(await write).toBe(200);
    expect(await read).toBe(200);
    expect(order.sort()).toEqual(["read", "write"]);
    // Nothing pending: a read goes out at once.
    expect((await call(server.baseUrl, "GET", "/public/v1/currencies")).status).toBe(200);
  });
});
