// The payer's live streams (product §18) on both stores: bounded per client address, and every slot comes back however fast clients leave.
import { type ClientRequest, request as httpRequest, type IncomingMessage } from "node:http";
import { beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.ts";
import { MAX_STREAMS_PER_INVOICE } from "../../src/http/pay/events.ts";
import { waitFor } from "../support/callbacks.ts";
import { useTestServer } from "../support/fixture.ts";
import { createInvoice } from "../support/invoices.ts";
import { createMerchant } from "../support/server.ts";

let apiKey: string;

// 127.0.0.3 is a trusted proxy (TRUST_PROXY): the IPv6 test's clients come through it.
const server = useTestServer({ env: { TRUST_PROXY: "127.0.0.3" } });
beforeAll(async () => {
  apiKey = (await createMerchant(server)).apiKey;
});

interface Stream {
  status: number;
  code: string | null;
  close(): void;
}

/** Opens /pay/{id}/events from a given local address (the whole of 127/8 is loopback on Linux). */
function openStream(invoiceId: string, localAddress = "127.0.0.1", forwardedFor?: string): Promise<Stream> {
  const { port } = new URL(server.baseUrl);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: "127.0.0.1",
        port: Number(port),
        path: `/pay/${invoiceId}/events`,
        localAddress,
        agent: false,
        headers: forwardedFor === undefined ? {} : { "x-forwarded-for": forwardedFor },
      },
      (res: IncomingMessage) => {
        const close = () => {
          res.destroy();
          req.destroy();
        };
        if (res.statusCode === 200) {
          resolve({ status: 200, code: null, close });
          return;
        }
        let text = "";
        res.on("data", (chunk: Buffer) => {
          text += chunk.toString();
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, code: JSON.parse(text).code ?? null, close }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

async function newInvoices(count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push((await createInvoice(server, apiKey, { currency: "USDT", amount: 10 })).id);
  return ids;
}

/** Opens `count` streams spread over invoices (each takes at most MAX_STREAMS_PER_INVOICE). */
async function fillFrom(localAddress: string, count: number): Promise<Stream[]> {
  const invoices = await newInvoices(Math.ceil(count / MAX_STREAMS_PER_INVOICE) + 1);
  const streams: Stream[] = [];
  for (let i = 0; i < count; i++) {
    const stream = await openStream(invoices[Math.floor(i / MAX_STREAMS_PER_INVOICE)] as string, localAddress);
    streams.push(stream);
  }
  return streams;
}

describe("payer's event streams per client address", () => {
  it("defaults to 20 per address, configurable with PAY_STREAMS_PER_ADDRESS", () => {
    const base = { DATABASE_URL: "sqlite::memory:", SECRET_ENCRYPTION_KEY: "a".repeat(64) };
    expect(loadConfig(base).payStreamsPerAddress).toBe(20);
    expect(loadConfig({ ...base, PAY_STREAMS_PER_ADDRESS: "5" }).payStreamsPerAddress).toBe(5);
    expect(() => loadConfig({ ...base, PAY_STREAMS_PER_ADDRESS: "0" })).toThrow();
  });

  it("one address holds at most 20 streams; another address still gets one", async () => {
    const mine = await fillFrom("127.0.0.1", 20);
    const others: Stream[] = [];
    try {
      expect(mine.map((s) => s.status)).toEqual(Array(20).fill(200));
      const [spare] = await newInvoices(1);
      const refused = await openStream(spare as string, "127.0.0.1");
      expect([refused.status, refused.code]).toEqual([429, "too_many_streams"]);
      others.push(await openStream(spare as string, "127.0.0.2"));
      expect(others[0]?.status).toBe(200);
      // Giving one back lets the address open one again.
      mine.shift()?.close();
      await waitFor(async () => {
        const again = await openStream(spare as string, "127.0.0.1");
        if (again.status === 200) others.push(again);
        return again.status === 200;
      }, 10_000);
    } finally {
      for (const s of [...mine, ...others]) s.close();
    }
  });

  // Counted as every per-address limit is (clientAddress): an IPv6 client holds a whole /64.
  it("an IPv6 client's addresses in one /64 share its 20 streams", async () => {
    const invoices = await newInvoices(Math.ceil(21 / MAX_STREAMS_PER_INVOICE) + 1);
    const held: Stream[] = [];
    try {
      for (let i = 0; i < 21; i++) {
        const invoice = invoices[Math.floor(i / MAX_STREAMS_PER_INVOICE)] as string;
        held.push(await openStream(invoice, "127.0.0.3", `2001:db8:1:2::${(i + 1).toString(16)}`));
      }
      expect(held.map((s) => s.status)).toEqual([...Array(20).fill(200), 429]);
      expect(held[20]?.code).toBe("too_many_streams");
      const elsewhere = await openStream(invoices.at(-1) as string, "127.0.0.3", "2001:db8:1:3::1");
      held.push(elsewhere);
      expect(elsewhere.status).toBe(200);
    } finally {
      for (const s of held) s.close();
    }
  });

  it("slots come back when clients leave at once, however fast, even before their stream began", async () => {
    const [invoice] = await newInvoices(1);
    const { port } = new URL(server.baseUrl);
    // 400 clients that send the request and leave without waiting, 40 at a time, and 100 that leave on the status line.
    for (let round = 0; round < 10; round++) {
      const leaving: Promise<void>[] = [];
      for (let i = 0; i < 40; i++) {
        leaving.push(
          new Promise<void>((resolve) => {
            const req: ClientRequest = httpRequest({
              host: "127.0.0.1",
              port: Number(port),
              path: `/pay/${invoice}/events`,
              agent: false,
            });
            req.on("error", () => resolve());
            req.on("close", () => resolve());
            req.end(() => setImmediate(() => req.destroy()));
          }),
        );
      }
      await Promise.all(leaving);
    }
    for (let i = 0; i < 100; i++) {
      const stream = await openStream(invoice as string).catch(() => null);
      stream?.close();
    }
    // Every slot is free again: the invoice takes its full number of streams, and the address its 20.
    let held: Stream[] = [];
    try {
      await waitFor(async () => {
        for (const s of held) s.close();
        held = [];
        for (let i = 0; i < MAX_STREAMS_PER_INVOICE; i++) held.push(await openStream(invoice as string));
        return held.every((s) => s.status === 200);
      }, 15_000);
      for (const s of held) s.close();
      held = [];
      await waitFor(async () => {
        for (const s of held) s.close();
        held = await fillFrom("127.0.0.1", 20);
        return held.every((s) => s.status === 200);
      }, 15_000);
    } finally {
      for (const s of held) s.close();
    }
  }, 120_000);
});
