// Payment links against anonymous traffic (issue 42 items 3, 4): looks make no invoice, the Pay button is throttled per address and per link, a link's open invoices are bounded (also across two processes), abandoned invoices expire silently, and the invoice list filters by link.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServiceProcess, spawnServiceLike } from "../support/process.ts";
import { createMerchant, merchant, startTestServer, storeKind, type TestServer } from "../support/server.ts";

const OPEN_BOUND = 50;
const PER_LINK = 80;
const PER_ADDRESS = 5;
const ENV = {
  TRUST_PROXY: "127.0.0.1",
  LINK_OPEN_INVOICES: String(OPEN_BOUND),
  LINK_INVOICES_PER_LINK_PER_MINUTE: String(PER_LINK),
  LINK_INVOICES_PER_ADDRESS_PER_MINUTE: String(PER_ADDRESS),
};

let server: TestServer;
let m: { id: string; apiKey: string };
/** Each scenario's visitors come from addresses of their own (10.<block>.<i / 250>.<i % 250>), believed through TRUST_PROXY. */
let nextBlock = 1;
const addressOf = (block: number, i: number) => `10.${block}.${Math.floor(i / 250)}.${(i % 250) + 1}`;

beforeAll(async () => {
  server = await startTestServer({ env: ENV });
  m = await createMerchant(server);
}, 60_000);
afterAll(async () => {
  await server.close();
});

async function newLink(fields: Record<string, unknown> = {}): Promise<string> {
  const link = await merchant(server, m.apiKey, "POST", "/public/v1/payment-links", {
    currency: "USDT",
    amount: "25",
    ...fields,
  });
  expect(link.status).toBe(200);
  return link.body.id;
}

/** A press of the Pay button without a session cookie, from `from`. */
function payFrom(base: string, linkId: string, from: string): Promise<Response> {
  return fetch(`${base}/l/${linkId}`, {
    method: "POST",
    redirect: "manual",
    headers: { "content-type": "application/x-www-form-urlencoded", accept: "text/html", "x-forwarded-for": from },
    body: "",
  });
}

async function linkInvoices(linkId: string) {
  return server.ctx.store.db
    .selectFrom("payment_link_invoices")
    .select("invoice_id")
    .where("link_id", "=", linkId)
    .execute();
}

function tally(answers: Response[]): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const a of answers) counts[a.status] = (counts[a.status] ?? 0) + 1;
  return counts;
}

/** Runs `n` tasks, at most `width` at a time. */
async function pooled<T>(n: number, width: number, task: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = [];
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < n; i = next++) out[i] = await task(i);
  };
  await Promise.all(Array.from({ length: width }, worker));
  return out;
}

describe("payment links under anonymous traffic", () => {
  it("makes no invoice for any number of looks without a cookie", async () => {
    const id = await newLink();
    const looks = storeKind() === "postgres" ? 1500 : 3000;
    const block = nextBlock++;
    const answers = await pooled(looks, 50, async (i) => {
      const r = await fetch(`${server.baseUrl}/l/${id}`, {
        redirect: "manual",
        headers: { accept: "text/html", "x-forwarded-for": addressOf(block, i % 20) },
      });
      await r.arrayBuffer();
      return { status: r.status, cookie: r.headers.get("set-cookie") };
    });
    // 429 is the generic per-address request limit of unauthenticated routes, where configured.
    expect(answers.filter((a) => a.status !== 200 && a.status !== 429)).toEqual([]);
    expect(answers.filter((a) => a.cookie !== null)).toEqual([]);
    expect(await linkInvoices(id)).toHaveLength(0);
  });

  it("makes at most the link's bound of open invoices from parallel Pay presses", async () => {
    const id = await newLink();
    const block = nextBlock++;
    const answers = await Promise.all(
      Array.from({ length: 2 * OPEN_BOUND }, (_, i) => payFrom(server.baseUrl, id, addressOf(block, i))),
    );
    expect(tally(answers)).toEqual({ 303: OPEN_BOUND, 429: OPEN_BOUND });
    expect(await linkInvoices(id)).toHaveLength(OPEN_BOUND);
    const refused = answers.find((a) => a.status === 429) as Response;
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(refused.headers.get("content-type")).toMatch(/^text\/html/);
    expect(await refused.text()).toContain("Try again later");
    // Counted before evaluated: the link's window holds exactly its limit, whatever was refused after.
    const counter = await server.ctx.store.db
      .selectFrom("throttle_counters")
      .select("attempts")
      .where("subject", "=", `link-invoice:link:${id}`)
      .executeTakeFirstOrThrow();
    expect(Number(counter.attempts)).toBe(PER_LINK);
    // A payer who already has an invoice from the link still gets back to it.
    const first = answers.find((a) => a.status === 303) as Response;
    const cookie = (first.headers.get("set-cookie") ?? "").split(";")[0] as string;
    const back = await fetch(`${server.baseUrl}/l/${id}`, { redirect: "manual", headers: { cookie } });
    expect(back.status).toBe(303);
    expect(back.headers.get("location")).toBe(first.headers.get("location"));
  });

  it("throttles the Pay button per client address", async () => {
    const id = await newLink();
    const block = nextBlock++;
    const one = addressOf(block, 0);
    const answers = await Promise.all(Array.from({ length: 3 * PER_ADDRESS }, () => payFrom(server.baseUrl, id, one)));
    expect(tally(answers)).toEqual({ 303: PER_ADDRESS, 429: 2 * PER_ADDRESS });
    const json = await fetch(`${server.baseUrl}/l/${id}`, {
      method: "POST",
      redirect: "manual",
      headers: {
        "content-type": "application/x-www-form-urlencoded",
        accept: "application/json",
        "x-forwarded-for": one,
      },
      body: "",
    });
    expect(json.status).toBe(429);
    expect(((await json.json()) as { code: string }).code).toBe("rate_limited");
    expect((await payFrom(server.baseUrl, id, addressOf(block, 1))).status).toBe(303);
    expect(await linkInvoices(id)).toHaveLength(PER_ADDRESS + 1);
  });

  it("expires the invoices nobody paid without an event or a callback, and lists a link's invoices", async () => {
    const id = await newLink({ callbackUrl: "http://127.0.0.1:9/hook" });
    const block = nextBlock++;
    const visits = await Promise.all(
      Array.from({ length: 50 }, (_, i) => payFrom(server.baseUrl, id, addressOf(block, i))),
    );
    expect(tally(visits)).toEqual({ 303: 50 });
    const made = (await linkInvoices(id)).map((r) => r.invoice_id);
    // A plain invoice with the same callback URL expires with its event, as before.
    const plain = await merchant(server, m.apiKey, "POST", "/public/v1/invoices/create", {
      currency: "USDT",
      amount: "3",
      callbackUrl: "http://127.0.0.1:9/hook",
    });
    expect(plain.status).toBe(200);
    const past = new Date(Date.now() - 60_000).toISOString();
    await server.ctx.store.transaction((tx) =>
      tx.db
        .updateTable("invoices")
        .set({ expires_at: past })
        .where("id", "in", [...made, plain.body.id])
        .execute(),
    );
    expect(await server.workers.loops.expiry!.runOnce()).toBe(51);
    const statuses = await server.ctx.store.db
      .selectFrom("invoices")
      .select("status")
      .where("id", "in", made)
      .execute();
    expect(new Set(statuses.map((s) => s.status))).toEqual(new Set(["expired"]));
    const callbacks = await server.ctx.store.db
      .selectFrom("callback_events")
      .select(["invoice_id", "type"])
      .where("invoice_id", "in", [...made, plain.body.id])
      .execute();
    expect(callbacks).toEqual([{ invoice_id: plain.body.id, type: "invoice.expired" }]);
    const events = await server.ctx.store.db
      .selectFrom("events")
      .select("subject_id")
      .where("subject_id", "in", [...made, plain.body.id])
      .execute();
    expect(events).toEqual([{ subject_id: plain.body.id }]);

    // The list: by link, without the abandoned ones, or only them.
    const open = await payFrom(server.baseUrl, id, addressOf(block, 50));
    const openId = new URL(open.headers.get("location") ?? "").pathname.split("/")[2];
    const list = (query: string) => merchant(server, m.apiKey, "GET", `/public/v1/invoices?limit=100&${query}`);
    const ids = (answer: { body: { data: { id: string }[] } }) => answer.body.data.map((i) => i.id).sort();
    expect(ids(await list(`paymentLinkId=${id}`))).toEqual([...made, openId].sort());
    expect(ids(await list(`paymentLinkId=${id}&abandoned=false`))).toEqual([openId]);
    expect(ids(await list(`paymentLinkId=${id}&abandoned=true`))).toEqual([...made].sort());
    const withoutAbandoned = ids(await list("abandoned=false"));
    expect(withoutAbandoned).toContain(plain.body.id);
    expect(withoutAbandoned.filter((i) => made.includes(i))).toEqual([]);
    expect((await list("abandoned=maybe")).status).toBe(400);
    const other = await createMerchant(server);
    expect((await merchant(server, other.apiKey, "GET", `/public/v1/invoices?paymentLinkId=${id}`)).body.data).toEqual(
      [],
    );
  });
});

if (storeKind() === "postgres") {
  describe("PostgreSQL: two processes share the bound", () => {
    let child: ServiceProcess;
    beforeAll(async () => {
      child = await spawnServiceLike(server, ENV);
    }, 60_000);
    afterAll(async () => {
      await child?.stop();
    });

    it("makes at most the bound of invoices from Pay presses split across processes", async () => {
      const id = await newLink();
      const block = nextBlock++;
      const bases = [server.baseUrl, child.baseUrl];
      const answers = await Promise.all(
        Array.from({ length: PER_LINK }, (_, i) => payFrom(bases[i % 2] as string, id, addressOf(block, i))),
      );
      expect(tally(answers)).toEqual({ 303: OPEN_BOUND, 429: PER_LINK - OPEN_BOUND });
      expect(await linkInvoices(id)).toHaveLength(OPEN_BOUND);
    });
  });
}
