// Callback test helpers: a real HTTP receiver on loopback, invoice rows written directly, and outbox shortcuts.
import { randomUUID } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { InvoiceStatus } from "../../src/domain/invoiceStatus.ts";
import type { InvoiceView } from "../../src/domain/invoices.ts";
import type { CallbackEvent } from "../../src/store/callbacks.ts";
import { recordInvoiceEvent } from "../../src/store/events.ts";
import { nowIso } from "../../src/store/store.ts";
import type { TestServer } from "./server.ts";

export interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

export type Responder = (request: Received, res: ServerResponse) => void;

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** Requests whose answer has not been sent yet. */
  open(): number;
  /** The most requests that were open at once. */
  maxOpen(): number;
  /** Answers the next requests in turn; when the list runs out, `fallback` answers. */
  respond(...responders: Responder[]): void;
  close(): Promise<void>;
}

export const answer =
  (status: number, body = "", headers: Record<string, string> = {}): Responder =>
  (_request, res) => {
    res.writeHead(status, { "content-type": "text/plain", ...headers });
    res.end(body);
  };

/** Holds the request open until `release` is called (or the receiver closes). */
export function hold(): { responder: Responder; release: () => void } {
  const waiting: ServerResponse[] = [];
  let released = false;
  return {
    responder: (_request, res) => {
      if (released) answer(200)(_request, res);
      else waiting.push(res);
    },
    release: () => {
      released = true;
      for (const res of waiting.splice(0)) if (!res.destroyed) answer(200)({} as Received, res);
    },
  };
}

export async function startReceiver(fallback: Responder = answer(200, "ok")): Promise<Receiver> {
  const received: Received[] = [];
  const queue: Responder[] = [];
  let open = 0;
  let maxOpen = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    open += 1;
    maxOpen = Math.max(maxOpen, open);
    res.on("close", () => {
      open -= 1;
    });
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const entry: Received = {
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
        at: Date.now(),
      };
      received.push(entry);
      (queue.shift() ?? fallback)(entry, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/callbacks`,
    port,
    received,
    open: () => open,
    maxOpen: () => maxOpen,
    respond: (...responders) => queue.push(...responders),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** An invoice row written directly (the invoice routes live on another branch), answered as the Invoice object. */
export async function insertInvoice(
  server: TestServer,
  merchantId: string,
  callbackUrl: string | null,
  status: InvoiceStatus = "pending",
): Promise<InvoiceView> {
  const id = `inv_${randomUUID().replaceAll("-", "")}`;
  const now = nowIso();
  await server.ctx.store.transaction((tx) =>
    tx.db
      .insertInto("invoices")
      .values({
        id,
        merchant_id: merchantId,
        idempotency_key: null,
        request_hash: null,
        type: "b2c",
        status,
        currency: "USDT",
        settlement_currency: "USDT",
        convert_currency: null,
        amount: "100000000",
        final_amount: "100000000",
        merchant_fee: "1000000",
        network_and_other_fees: "1000000",
        merchant_receive_amount: "98000000",
        callback_url: callbackUrl,
        success_url: null,
        return_url: null,
        fail_url: null,
        order_no: "order-1",
        description: "Test order",
        api_source: null,
        deposit_address: null,
        expires_at: null,
        created_at: now,
        updated_at: now,
      })
      .execute(),
  );
  return {
    id,
    created_at: now,
    updated_at: now,
    expires_at: null,
    invoice_url: `${server.config.publicBaseUrl}/pay/${id}`,
    api_source: null,
    type: "b2c",
    status,
    merchant_id: merchantId,
    settlement_currency: "USDT",
    currency: "USDT",
    convert_currency: null,
    amount: "100",
    final_amount: "100",
    merchant_fee: "1",
    network_and_other_fees: "1",
    merchant_receive_amount: "98",
    paid_amount: "0",
    callback_url: callbackUrl,
    success_url: null,
    return_url: null,
    fail_url: null,
    order_no: "order-1",
    description: "Test order",
  };
}

/** A status change as the invoice transition makes it: the row, its event and its callback in one transaction. */
export async function changeStatus(
  server: TestServer,
  invoice: InvoiceView,
  status: InvoiceStatus,
): Promise<{ invoice: InvoiceView; event: CallbackEvent }> {
  const now = nowIso();
  const changed = { ...invoice, status, updated_at: now };
  const event = await server.ctx.store.transaction(async (tx) => {
    await tx.db.updateTable("invoices").set({ status, updated_at: now }).where("id", "=", invoice.id).execute();
    if (changed.callback_url === null) throw new Error("test invoice has no callback_url");
    const recorded = await recordInvoiceEvent(tx, changed, now);
    if (recorded.callback === null) throw new Error("an invoice with a callback_url has its callback");
    return recorded.callback;
  });
  return { invoice: changed, event };
}

export async function eventRow(server: TestServer, eventId: string) {
  return server.ctx.store.db
    .selectFrom("callback_events")
    .selectAll()
    .where("id", "=", eventId)
    .executeTakeFirstOrThrow();
}

export async function attemptRows(server: TestServer, eventId: string) {
  return server.ctx.store.db
    .selectFrom("callback_attempts")
    .selectAll()
    .where("event_id", "=", eventId)
    .orderBy("number")
    .execute();
}

/** Moves a pending event's next attempt into the past, instead of waiting for the schedule. */
export async function makeDue(server: TestServer, eventId: string): Promise<void> {
  await server.ctx.store.transaction((tx) =>
    tx.db
      .updateTable("callback_events")
      .set({ next_attempt_at: new Date(Date.now() - 1000).toISOString() })
      .where("id", "=", eventId)
      .where("status", "=", "pending")
      .execute(),
  );
}

/** Ends every pending event of earlier tests, so a test sees only its own due events. */
export async function settleAllPending(server: TestServer): Promise<void> {
  await server.ctx.store.transaction((tx) =>
    tx.db
      .updateTable("callback_events")
      .set({ status: "failed", next_attempt_at: null, lease_until: null, claim_token: null })
      .where("status", "=", "pending")
      .execute(),
  );
}

/**
 * Waits until `condition` holds, polling every 10 ms, at most `timeoutMs`: a bound against a hang,
 * generous so that a loaded machine is not taken for a failure.
 */
export async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 25_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
