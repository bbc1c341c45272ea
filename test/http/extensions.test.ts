// Merchant API extensions (product §15): reads of withdrawals and refunds, and the newest-first keyset lists, through the real server.
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { useTestServer } from "../support/fixture.ts";
import { createInvoice } from "../support/invoices.ts";
import { completedInvoice, payoutOutcome, REFUND_KEYS, type RefundMerchant, refundCrypto } from "../support/refunds.ts";
import { expectProblem, merchant } from "../support/server.ts";
import { type FundedMerchant, fundedMerchant, withdraw } from "../support/withdrawals.ts";

/** Merchant A: 7 invoices (2 completed and refunded), 5 withdrawals; merchant B: one of each. */
let a: FundedMerchant;
let b: FundedMerchant;
const invoicesA: string[] = [];
const withdrawalsA: { id: string; answer: Record<string, unknown> }[] = [];
const refundsA: { id: string; answer: Record<string, unknown> }[] = [];
let invoiceB: string;
let withdrawalB: string;
let refundB: string;

const TIE = "2026-05-01T10:00:00.000Z";

const server = useTestServer();
beforeAll(async () => {
  [a, b] = await Promise.all([fundedMerchant(server, "1000"), fundedMerchant(server, "1000")]);
  for (let i = 0; i < 5; i++) {
    invoicesA.push(
      (await createInvoice(server, a.apiKey, { currency: "USDT", amount: 10 + i, order_no: `o-${i}` })).id,
    );
  }
  const asRefunder = (m: FundedMerchant): RefundMerchant => ({ id: m.id, apiKey: m.apiKey, secretKey: m.secretKey });
  for (let i = 0; i < 2; i++) {
    const paid = await completedInvoice(server, asRefunder(a), { currency: "USDT", amount: 50 });
    invoicesA.push(paid.id);
    const refund = await refundCrypto(server, asRefunder(a), { invoiceId: paid.id, address: `0xrefund${i}` });
    expect(refund.answer.status).toBe(200);
    refundsA.push({ id: refund.requestId, answer: refund.answer.body });
  }
  for (let i = 0; i < 5; i++) {
    const made = await withdraw(server, a, { amount: String(10 + i) });
    expect(made.answer.status).toBe(200);
    withdrawalsA.push({ id: made.requestId, answer: made.answer.body });
  }
  invoiceB = (await createInvoice(server, b.apiKey, { currency: "USDT", amount: 10 })).id;
  const paidB = await completedInvoice(server, asRefunder(b), { currency: "USDT", amount: 20 });
  refundB = (await refundCrypto(server, asRefunder(b), { invoiceId: paidB.id, address: "0xrefundb" })).requestId;
  withdrawalB = (await withdraw(server, b)).requestId;
  // Ties in created_at: three invoices and three withdrawals share one instant, so only the id orders them.
  await server.ctx.store.transaction(async (tx) => {
    await tx.db.updateTable("invoices").set({ created_at: TIE }).where("id", "in", invoicesA.slice(1, 4)).execute();
    await tx.db
      .updateTable("withdrawals")
      .set({ created_at: TIE })
      .where(
        "request_id",
        "in",
        withdrawalsA.slice(0, 3).map((w) => w.id.toLowerCase()),
      )
      .execute();
  });
  for (const w of withdrawalsA.slice(0, 3)) (w.answer.request as Record<string, unknown>).created_at = TIE;
});

const get = (m: FundedMerchant, path: string) => merchant(server, m.apiKey, "GET", path);

/** Every page of a list, following has_more and starting_after. */
async function walk(m: FundedMerchant, path: string, query: string): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let after: string | undefined;
  for (let pages = 1; pages <= 50; pages++) {
    const q = [query, after === undefined ? "" : `starting_after=${encodeURIComponent(after)}`].filter(Boolean);
    const answer = await get(m, `${path}?${q.join("&")}`);
    expect(answer.status, answer.text).toBe(200);
    expect(Object.keys(answer.body)).toEqual(["data", "has_more"]);
    const page = answer.body.data as { id: string }[];
    ids.push(...page.map((x) => x.id));
    if (!answer.body.has_more) return { ids, pages };
    expect(page.length).toBeGreaterThan(0);
    after = page.at(-1)?.id;
  }
  throw new Error("more than 50 pages");
}

/** The expected order straight from the table: created_at desc, then the row id desc. */
async function expectedOrder(table: "invoices" | "withdrawals" | "refunds", merchantId: string): Promise<string[]> {
  if (table === "invoices") {
    const rows = await server.ctx.store.db
      .selectFrom("invoices")
      .select(["id", "created_at"])
      .where("merchant_id", "=", merchantId)
      .execute();
    return rows
      .sort((x, y) => (x.created_at === y.created_at ? (x.id < y.id ? 1 : -1) : x.created_at < y.created_at ? 1 : -1))
      .map((r) => r.id);
  }
  const rows = await server.ctx.store.db
    .selectFrom(table)
    .innerJoin("signed_requests", "signed_requests.request_id", `${table}.request_id`)
    .select([
      `${table}.request_id as key`,
      `${table}.created_at as created_at`,
      "signed_requests.request_id_sent as id",
    ])
    .where(`${table}.merchant_id`, "=", merchantId)
    .execute();
  return rows
    .sort((x, y) => (x.created_at === y.created_at ? (x.key < y.key ? 1 : -1) : x.created_at < y.created_at ? 1 : -1))
    .map((r) => r.id);
}

describe("GET /public/v1/withdrawals/{id} and /refunds/{id}", () => {
  it("answer { request } exactly as the signed operation answered it, then in its current state", async () => {
    for (const w of withdrawalsA) {
      const read = await get(a, `/public/v1/withdrawals/${w.id}`);
      expect(read.status).toBe(200);
      expect(read.body).toEqual(w.answer);
    }
    // The id matches whatever its case, as the signed operation's request id does.
    expect((await get(a, `/public/v1/withdrawals/${withdrawalsA[0]!.id.toUpperCase()}`)).body).toEqual(
      withdrawalsA[0]!.answer,
    );
    const refund = refundsA[0]!;
    const read = await get(a, `/public/v1/refunds/${refund.id}`);
    expect(read.body).toEqual(refund.answer);
    expect(Object.keys(read.body.request)).toEqual(REFUND_KEYS);

    const settled = await payoutOutcome(server, a, refund.id, { status: "completed", txId: "0xdone" });
    expect(settled.status).toBe(200);
    const after = await get(a, `/public/v1/refunds/${refund.id}`);
    expect(after.body).toEqual(settled.body);
    expect(after.body.request.status).toBe("completed");
    expect(after.body.request.payout_processor_tx_id).toBe("0xdone");
  });

  it("answer 404 for another merchant's id and an unknown one", async () => {
    expectProblem(await get(a, `/public/v1/withdrawals/${withdrawalB}`), 404, "withdrawal_not_found");
    expectProblem(await get(a, `/public/v1/withdrawals/${randomUUID()}`), 404, "withdrawal_not_found");
    expectProblem(await get(a, `/public/v1/refunds/${refundB}`), 404, "refund_not_found");
    expectProblem(await get(a, "/public/v1/refunds/nope"), 404, "refund_not_found");
    // A refund's id is not a withdrawal's.
    expectProblem(await get(a, `/public/v1/withdrawals/${refundsA[0]!.id}`), 404, "withdrawal_not_found");
  });

  it("need the API key", async () => {
    const answer = await merchant(server, "", "GET", `/public/v1/withdrawals/${withdrawalsA[0]!.id}`);
    expectProblem(answer, 401, "unauthorized");
  });
});

describe("GET /public/v1/invoices, /withdrawals, /refunds", () => {
  it("list newest first, ties in created_at ordered by id, at every page size", async () => {
    for (const [path, table, count] of [
      ["/public/v1/invoices", "invoices", 7],
      ["/public/v1/withdrawals", "withdrawals", 5],
      ["/public/v1/refunds", "refunds", 2],
    ] as const) {
      const expected = await expectedOrder(table, a.id);
      expect(expected).toHaveLength(count);
      for (const limit of [1, 2, 3, count, 100]) {
        const { ids, pages } = await walk(a, path, `limit=${limit}`);
        expect(ids, `${path} limit ${limit}`).toEqual(expected);
        expect(pages).toBe(Math.max(1, Math.ceil(count / limit)));
      }
    }
  });

  it("answer each item exactly as its own read does", async () => {
    const invoices = await get(a, "/public/v1/invoices?limit=100");
    for (const invoice of invoices.body.data) {
      expect((await get(a, `/public/v1/invoices/${invoice.id}`)).body).toEqual(invoice);
    }
    const withdrawals = await get(a, "/public/v1/withdrawals");
    for (const w of withdrawals.body.data) {
      expect((await get(a, `/public/v1/withdrawals/${w.id}`)).body).toEqual({ request: w });
    }
    const refunds = await get(a, "/public/v1/refunds");
    for (const r of refunds.body.data) {
      expect((await get(a, `/public/v1/refunds/${r.id}`)).body).toEqual({ request: r });
    }
  });

  it("default to 20 and never show another merchant's objects", async () => {
    const invoices = await get(b, "/public/v1/invoices");
    expect(invoices.body.data.map((i: { id: string }) => i.id).sort()).toEqual(
      (await expectedOrder("invoices", b.id)).sort(),
    );
    expect(invoices.body.data.map((i: { id: string }) => i.id)).toContain(invoiceB);
    expect((await get(b, "/public/v1/withdrawals")).body).toMatchObject({ has_more: false });
    expect((await get(b, "/public/v1/withdrawals")).body.data.map((w: { id: string }) => w.id)).toEqual([withdrawalB]);
    expect((await get(b, "/public/v1/refunds")).body.data.map((r: { id: string }) => r.id)).toEqual([refundB]);
    const twenty = await fundedMerchant(server, "0");
    for (let i = 0; i < 21; i++) await createInvoice(server, twenty.apiKey, { currency: "USDT", amount: 10 });
    const first = await get(twenty, "/public/v1/invoices");
    expect(first.body.data).toHaveLength(20);
    expect(first.body.has_more).toBe(true);
  });

  it("filter by status", async () => {
    const completedInvoices = await get(a, "/public/v1/invoices?status=refund_processing&limit=100");
    const statuses = (await get(a, "/public/v1/invoices?limit=100")).body.data.map((i: { status: string }) => i.status);
    expect(completedInvoices.body.data.length).toBe(statuses.filter((s: string) => s === "refund_processing").length);
    expect(completedInvoices.body.data.every((i: { status: string }) => i.status === "refund_processing")).toBe(true);
    expect((await get(a, "/public/v1/invoices?status=pending&limit=100")).body.data).toHaveLength(5);
    const refunded = await get(a, "/public/v1/refunds?status=completed");
    expect(refunded.body.data.map((r: { id: string }) => r.id)).toEqual([refundsA[0]!.id]);
    const processing = await get(a, "/public/v1/refunds?status=processing");
    expect(processing.body.data.map((r: { id: string }) => r.id)).toEqual([refundsA[1]!.id]);
    expect((await get(a, "/public/v1/refunds?status=failed")).body).toEqual({ data: [], has_more: false });
    expect((await get(a, "/public/v1/withdrawals?status=processing&limit=100")).body.data).toHaveLength(5);
    expect((await get(a, "/public/v1/withdrawals?status=completed")).body.data).toHaveLength(0);
    // Paging within a filter.
    const { ids } = await walk(a, "/public/v1/invoices", "status=pending&limit=2");
    const pending = (await expectedOrder("invoices", a.id)).filter((id) => invoicesA.slice(0, 5).includes(id));
    expect(ids).toEqual(pending);
  });

  it("filter by created_gte (inclusive) and created_lt (exclusive), in any RFC 3339 offset", async () => {
    const all = await expectedOrder("withdrawals", a.id);
    const tied = withdrawalsA.slice(0, 3).map((w) => w.id);
    const at = (q: string) => walk(a, "/public/v1/withdrawals", `limit=2&${q}`).then((r) => r.ids);
    expect(await at(`created_gte=${TIE}&created_lt=2026-05-01T10:00:00.001Z`)).toEqual(
      all.filter((id) => tied.includes(id)),
    );
    expect(await at(`created_lt=${TIE}`)).toEqual([]);
    expect(await at(`created_gte=2026-05-01T10:00:00.001Z`)).toEqual(all.filter((id) => !tied.includes(id)));
    // The same instant written with an offset.
    expect(
      await at(`created_gte=${encodeURIComponent("2026-05-01T12:00:00+02:00")}&created_lt=2026-05-01T10:00:01Z`),
    ).toEqual(all.filter((id) => tied.includes(id)));
    // A cursor together with a window: the window still holds.
    const firstTied = all.filter((id) => tied.includes(id))[0]!;
    expect(await at(`created_gte=${TIE}&created_lt=2026-05-01T10:00:01Z&starting_after=${firstTied}`)).toEqual(
      all.filter((id) => tied.includes(id)).slice(1),
    );
  });

  it("refuse starting_after that is not the merchant's own, with its own code", async () => {
    for (const [path, foreign] of [
      ["/public/v1/invoices", invoiceB],
      ["/public/v1/withdrawals", withdrawalB],
      ["/public/v1/refunds", refundB],
      ["/public/v1/invoices", "nope"],
      ["/public/v1/withdrawals", randomUUID()],
    ] as const) {
      const refused = await get(a, `${path}?starting_after=${foreign}`);
      expectProblem(refused, 400, "starting_after_not_found");
      expect(refused.body.errors[0].pointer).toBe("/starting_after");
    }
  });

  it("refuse unknown and ill-typed parameters, naming them", async () => {
    const cases: [string, string][] = [
      ["limit=0", "/limit"],
      ["limit=101", "/limit"],
      ["limit=abc", "/limit"],
      ["limit=1.5", "/limit"],
      ["limit=", "/limit"],
      ["limit=1&limit=2", "/limit"],
      ["status=done", "/status"],
      ["created_gte=yesterday", "/created_gte"],
      ["created_lt=2026-13-01T00:00:00Z", "/created_lt"],
      ["created_gte=2026-05-01", "/created_gte"],
      ["created_lt=2026-12-31T23:59:60Z", "/created_lt"],
      ["starting_after=", "/starting_after"],
      ["startingAfter=x", "/startingAfter"],
      ["offset=10", "/offset"],
    ];
    for (const path of ["/public/v1/invoices", "/public/v1/withdrawals", "/public/v1/refunds"]) {
      for (const [query, pointer] of cases) {
        const refused = await get(a, `${path}?${query}`);
        expectProblem(refused, 400, "validation_failed");
        expect(
          refused.body.errors.map((e: { pointer: string }) => e.pointer),
          `${path}?${query}`,
        ).toContain(pointer);
      }
    }
  });
});

describe("GET /public/v1/balances", () => {
  it("answers the key's merchant's own balances, every catalog entry, exactly", async () => {
    const funded = await fundedMerchant(server, "12.5");
    const other = await fundedMerchant(server, "3");
    const answer = await merchant(server, funded.apiKey, "GET", "/public/v1/balances");
    expect(answer.status).toBe(200);
    const usdt = answer.body.find((b: { internalTicker: string }) => b.internalTicker === "USDT_ERC20");
    expect(usdt).toEqual({ currency: "USDT", internalTicker: "USDT_ERC20", network: "ethereum", available: "12.5" });
    expect(answer.body.find((b: { currency: string }) => b.currency === "ETH")?.available).toBe("0");
    const theirs = await merchant(server, other.apiKey, "GET", "/public/v1/balances");
    expect(theirs.body.find((b: { internalTicker: string }) => b.internalTicker === "USDT_ERC20")?.available).toBe("3");
    expectProblem(await merchant(server, "pk_unknown", "GET", "/public/v1/balances"), 401, "invalid_api_key");
  });
});
