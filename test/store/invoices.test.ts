// Store functions other features build on: finding a merchant's invoice, the one status-changing function, payment summaries.
import { sql } from "kysely";
import { beforeAll, describe, expect, it } from "vitest";
import { invoicesByDepositAddress } from "../../src/store/chainPayments.ts";
import {
  applyTransition,
  findInvoiceForMerchant,
  incomingPaymentsSummary,
  lockInvoice,
} from "../../src/store/invoices.ts";
import { nowIso } from "../../src/store/store.ts";
import { useTestServer } from "../support/fixture.ts";
import { createInvoice, invoiceMovements, pay } from "../support/invoices.ts";
import { createMerchant, merchant } from "../support/server.ts";

let m: { id: string; apiKey: string };

const server = useTestServer();
beforeAll(async () => {
  m = await createMerchant(server);
});

describe("findInvoiceForMerchant", () => {
  it("finds the merchant's invoice with its decimals and payments, and nothing for another merchant", async () => {
    const invoice = await createInvoice(server, m.apiKey, { currency: "EUR", amount: "10.5" });
    await pay(server, m.apiKey, invoice.id, { amount: 3, confirmed: false });
    const loaded = await findInvoiceForMerchant(server.ctx.store, m.id, invoice.id);
    expect(loaded?.invoice).toMatchObject({
      id: invoice.id,
      status: "processing",
      amountMinor: 1050n,
      currency: "EUR",
    });
    expect(loaded?.decimals).toBe(2);
    expect(loaded?.payments).toHaveLength(1);
    expect(loaded?.payments[0]).toMatchObject({ amountMinor: 300n, confirmed: false, amlStatus: "none" });
    const intruder = await createMerchant(server);
    expect(await findInvoiceForMerchant(server.ctx.store, intruder.id, invoice.id)).toBeNull();
  });
});

describe("incomingPaymentsSummary", () => {
  it("names the sender only when there is exactly one incoming transaction and it has a sender address", async () => {
    const one = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 10 });
    await pay(server, m.apiKey, one.id, { fromAddress: "0xsender" });
    expect(await incomingPaymentsSummary(server.ctx.store, one.id)).toEqual({
      count: 1,
      paidMinor: 10_000000n,
      settledMinor: 10_000000n,
      unsettledCount: 0,
      senderAddresses: ["0xsender"],
      soleSenderAddress: "0xsender",
    });

    const anonymous = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 10 });
    await pay(server, m.apiKey, anonymous.id);
    expect((await incomingPaymentsSummary(server.ctx.store, anonymous.id)).soleSenderAddress).toBeNull();

    const two = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 10 });
    await pay(server, m.apiKey, two.id, { amount: 4, fromAddress: "0xa" });
    await pay(server, m.apiKey, two.id, { amount: 6, fromAddress: "0xa" });
    const summary = await incomingPaymentsSummary(server.ctx.store, two.id);
    expect(summary).toMatchObject({
      count: 2,
      paidMinor: 10_000000n,
      senderAddresses: ["0xa"],
      soleSenderAddress: null,
    });

    const card = await createInvoice(server, m.apiKey, { currency: "EUR", amount: 10 });
    await pay(server, m.apiKey, card.id);
    expect(await incomingPaymentsSummary(server.ctx.store, card.id)).toMatchObject({
      count: 1,
      senderAddresses: [],
      soleSenderAddress: null,
    });
  });
});

describe("applyTransition", () => {
  it("changes the status along the table only, and only from the status the caller read", async () => {
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 10 });
    await pay(server, m.apiKey, invoice.id);
    const store = server.ctx.store;

    const refused = await store.transaction(async (tx) => {
      const locked = await lockInvoice(tx, invoice.id, m.id);
      if (!locked) throw new Error("invoice vanished");
      return applyTransition(tx, locked, "refunded", "refund_completed", nowIso(), "http://127.0.0.1:8080");
    });
    expect(refused).toMatchObject({ ok: false, error: "transition_refused" });
    // The cause must be the table's cause for that pair.
    const wrongCause = await store.transaction(async (tx) => {
      const locked = await lockInvoice(tx, invoice.id, m.id);
      return applyTransition(tx, locked!, "refund_processing", "refund_failed", nowIso(), "http://127.0.0.1:8080");
    });
    expect(wrongCause).toMatchObject({ ok: false, error: "transition_refused" });

    const moved = await store.transaction(async (tx) => {
      const locked = await lockInvoice(tx, invoice.id, m.id);
      return applyTransition(tx, locked!, "refund_processing", "refund_accepted", nowIso(), "http://127.0.0.1:8080");
    });
    expect(moved).toMatchObject({ ok: true, value: { status: "refund_processing" } });
    expect((await merchant(server, m.apiKey, "GET", `/public/v1/invoices/${invoice.id}`)).body.status).toBe(
      "refund_processing",
    );

    // A caller holding a stale copy (read as completed) is refused instead of overwriting.
    const stale = await store.transaction(async (tx) => {
      const locked = await lockInvoice(tx, invoice.id, m.id);
      return applyTransition(
        tx,
        { ...locked!, status: "completed" },
        "refund_processing",
        "refund_accepted",
        nowIso(),
        "http://127.0.0.1:8080",
      );
    });
    expect(stale).toMatchObject({ ok: false, error: "status_changed" });

    // A failed refund returns the invoice to completed without crediting the completion again.
    const back = await store.transaction(async (tx) => {
      const locked = await lockInvoice(tx, invoice.id, m.id);
      return applyTransition(tx, locked!, "completed", "refund_failed", nowIso(), "http://127.0.0.1:8080");
    });
    expect(back).toMatchObject({ ok: true, value: { status: "completed" } });
    expect(await invoiceMovements(server, invoice.id)).toHaveLength(1);
  });

  it("locks nothing for another merchant", async () => {
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 10 });
    const intruder = await createMerchant(server);
    expect(await server.ctx.store.transaction((tx) => lockInvoice(tx, invoice.id, intruder.id))).toBeNull();
  });
});

describe("deposit indexes (migration 017)", () => {
  it("hold only invoices with a deposit index, keep it unique, and serve the scanner's lookup", async () => {
    const store = server.ctx.store;
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 10 });
    const other = await createInvoice(server, m.apiKey, { currency: "USDT", amount: 10 });
    const row = await store.db
      .selectFrom("invoices")
      .select(["deposit_address", "deposit_index"])
      .where("id", "=", invoice.id)
      .executeTakeFirstOrThrow();
    // A sandbox invoice has an address and no deposit index.
    expect(row.deposit_address).toMatch(/^0x[0-9a-fA-F]{40}$/);
    expect(row.deposit_index).toBeNull();
    if (store.dialect === "sqlite") {
      const { rows: defs } = await sql<{
        sql: string;
      }>`SELECT sql FROM sqlite_master WHERE type = 'index' AND name IN ('invoices_deposit_address', 'invoices_deposit_index')`.execute(
        store.db,
      );
      expect(defs).toHaveLength(2);
      for (const d of defs) expect(d.sql).toContain("WHERE deposit_index IS NOT NULL");
      const indexed = async () =>
        Number(
          (
            await sql<{
              n: number;
            }>`SELECT count(*) AS n FROM invoices INDEXED BY invoices_deposit_address WHERE deposit_index IS NOT NULL`.execute(
              store.db,
            )
          ).rows[0]?.n,
        );
      const before = await indexed();
      await store.transaction((tx) =>
        tx.db.updateTable("invoices").set({ deposit_index: 987_654_321 }).where("id", "=", invoice.id).execute(),
      );
      expect(await indexed()).toBe(before + 1);
      const plan = await sql<{
        detail: string;
      }>`EXPLAIN QUERY PLAN SELECT id FROM invoices WHERE deposit_address IN ('0xab', '0xcd') AND deposit_index IS NOT NULL`.execute(
        store.db,
      );
      expect(plan.rows.map((r) => r.detail).join("\n")).toContain("invoices_deposit_address");
    } else {
      const { rows } = await sql<{
        indexname: string;
        indexdef: string;
      }>`SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'invoices' AND indexname IN ('invoices_deposit_address', 'invoices_deposit_index') ORDER BY indexname`.execute(
        store.db,
      );
      expect(rows).toHaveLength(2);
      for (const r of rows) expect(r.indexdef).toContain("WHERE (deposit_index IS NOT NULL)");
      await store.transaction((tx) =>
        tx.db.updateTable("invoices").set({ deposit_index: 987_654_321 }).where("id", "=", invoice.id).execute(),
      );
    }
    const found = await invoicesByDepositAddress(store, [row.deposit_address as string]);
    expect(found.map((f) => f.invoiceId)).toEqual([invoice.id]);
    // Two invoices can never share a deposit index.
    await expect(
      store.transaction((tx) =>
        tx.db.updateTable("invoices").set({ deposit_index: 987_654_321 }).where("id", "=", other.id).execute(),
      ),
    ).rejects.toThrow(/unique/i);
  });
});
