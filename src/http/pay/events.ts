// Live updates of the payer's page: server-sent events fed by a cheap poll of the invoice's version, so any process sees any other's writes.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { currentRails } from "../../app/rails.ts";
import { FINAL_PAY_STATUSES, payStatus, payVersion } from "../../store/payStatus.ts";
import { clientAddress } from "../addressLimits.ts";
import { Problem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { statusBody } from "./statusBody.ts";

/**
 * Bounds: streams per invoice (a few tabs), per client address (PAY_STREAMS_PER_ADDRESS, default
 * 20: one party cannot hold every slot) and per process; beyond them the page falls back to polling.
 */
export const MAX_STREAMS_PER_INVOICE = 4;
export const MAX_STREAMS_TOTAL = 200;

/** Open streams per key; a key whose count drops to zero is removed, so the map holds only open streams. */
class StreamCounts {
  private readonly counts = new Map<string, number>();
  of(key: string): number {
    return this.counts.get(key) ?? 0;
  }
  add(key: string): void {
    this.counts.set(key, this.of(key) + 1);
  }
  remove(key: string): void {
    const left = this.of(key) - 1;
    if (left <= 0) this.counts.delete(key);
    else this.counts.set(key, left);
  }
}
/** The version read is one indexed row; a second keeps "paid" visible within the 5 s the page promises. */
export const POLL_INTERVAL_MS = 1000;
export const HEARTBEAT_MS = 15_000;
/** A stream ends after this; EventSource reconnects by itself, which re-checks the bounds. */
export const STREAM_LIFETIME_MS = 10 * 60_000;

// longer than 70 lines: the stream's handler shares its per-process bounds (the counts, the open
// streams' closers) with the shutdown hook; they live in this one closure so no other code can touch them.
export function registerPayEvents(app: App, ctx: ServiceContext): void {
  // Counted per server: each process bounds its own streams.
  const perInvoice = new StreamCounts();
  const perAddress = new StreamCounts();
  const perAddressLimit = ctx.config.payStreamsPerAddress;
  let total = 0;
  /** Open streams' closers, so that a closing server ends them instead of waiting on them. */
  const closers = new Set<() => void>();
  app.addHook("preClose", async () => {
    for (const close of [...closers]) close();
  });
  app.get(
    "/pay/:id/events",
    { schema: { hide: true, params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 500 }) }) } },
    // longer than 70 lines: one stream's life, from its bounds through its heartbeats to its end, in the
    // order it happens; its cleanup must see every step's state.
    async (request, reply) => {
      const id = request.params.id;
      const hotWallet = ctx.wallet?.hotAddress ?? null;
      const first = await payStatus(ctx.store, id, await currentRails(ctx));
      if (!first) throw new Problem("invoice_not_found", "No invoice with this id.");
      // The address every per-address limit counts (TRUST_PROXY honoured; an IPv6 client's /64).
      const address = clientAddress(request);
      if (
        perInvoice.of(id) >= MAX_STREAMS_PER_INVOICE ||
        perAddress.of(address) >= perAddressLimit ||
        total >= MAX_STREAMS_TOTAL
      ) {
        throw new Problem("too_many_streams", "Too many live streams open; poll /status instead.");
      }
      // The connection may already be gone (a client that connects and leaves at once): no slot then.
      if (request.raw.destroyed || request.raw.socket.destroyed) return reply.hijack();
      perInvoice.add(id);
      perAddress.add(address);
      total += 1;

      reply.hijack();
      const raw = reply.raw;
      raw.writeHead(200, {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-store",
        "x-content-type-options": "nosniff",
        "referrer-policy": "no-referrer",
        "x-accel-buffering": "no",
        connection: "keep-alive",
      });

      let closed = false;
      let version: string | null = null;
      let polling = false;
      const timers: NodeJS.Timeout[] = [];
      const close = () => {
        if (closed) return;
        closed = true;
        closers.delete(close);
        for (const t of timers) clearInterval(t);
        perInvoice.remove(id);
        perAddress.remove(address);
        total -= 1;
        raw.end();
      };
      const send = (body: ReturnType<typeof statusBody>, final: boolean) => {
        if (closed) return;
        raw.write(`event: status\ndata: ${JSON.stringify(body)}\n\n`);
        if (final) close();
      };

      closers.add(close);
      // Listening before any await: a client that leaves while the first read runs gives its slot back.
      raw.on("close", close);
      raw.write("retry: 3000\n\n");
      try {
        version = await payVersion(ctx.store, id);
      } catch (error) {
        request.log.warn({ err: error, invoiceId: id }, "payer's page stream ended on a store error");
        close();
        return;
      }
      send(statusBody(first, hotWallet), FINAL_PAY_STATUSES.has(first.status));
      if (closed) return;

      const poll = async () => {
        if (closed || polling) return;
        polling = true;
        try {
          const now = await payVersion(ctx.store, id);
          if (now !== version && !closed) {
            version = now;
            const status = await payStatus(ctx.store, id, await currentRails(ctx));
            if (status) send(statusBody(status, hotWallet), FINAL_PAY_STATUSES.has(status.status));
          }
        } catch (error) {
          // A lost connection ends this stream, never the process; the page reconnects or polls.
          request.log.warn({ err: error, invoiceId: id }, "payer's page stream ended on a store error");
          close();
        } finally {
          polling = false;
        }
      };
      timers.push(setInterval(() => void poll(), POLL_INTERVAL_MS));
      timers.push(
        setInterval(() => {
          if (!closed) raw.write(": heartbeat\n\n");
        }, HEARTBEAT_MS),
      );
      timers.push(setTimeout(close, STREAM_LIFETIME_MS));
    },
  );
}
