// The SDK against the real service (SQLite and PostgreSQL): every operation, safe retries through a lossy proxy, real callbacks.
import { createServer, request as httpRequest, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Receiver, startReceiver, waitFor } from "../../../../test/support/callbacks.ts";
import { completedInvoice, feeFreeMerchant } from "../../../../test/support/refunds.ts";
import { admin, createMerchant, startTestServer, type TestServer } from "../../../../test/support/server.ts";
import { balanceOf, expectLedgerBalanced, fundedMerchant } from "../../../../test/support/withdrawals.ts";
import { PaymentsApiError, PaymentsClient, verifyCallback } from "../../src/index.ts";

/**
 * A node:http proxy in front of the service. When `dropNext` names a path, the next request to it
 * is forwarded, the upstream's whole answer is read, and then the client's socket is destroyed:
 * the operation happened, its answer is lost.
 */
interface LossyProxy {
  url: string;
  /** Requests seen, by path. */
  seen: { method: string; path: string; requestId: string | undefined }[];
  dropNext(path: string): void;
  /** How many answers were dropped. */
  dropped(): number;
  close(): Promise<void>;
}

async function startLossyProxy(upstream: string): Promise<LossyProxy> {
  const target = new URL(upstream);
  const drops: string[] = [];
  const seen: LossyProxy["seen"] = [];
  let dropped = 0;
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "").split("?")[0] ?? "";
    seen.push({ method: req.method ?? "", path, requestId: req.headers["x-service-request-id"] as string | undefined });
    const drop = drops.indexOf(path);
    if (drop >= 0) drops.splice(drop, 1);
    const forward = httpRequest(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
      (upstreamRes: IncomingMessage) => {
        const chunks: Buffer[] = [];
        upstreamRes.on("data", (c: Buffer) => chunks.push(c));
        upstreamRes.on("end", () => {
          if (drop >= 0) {
            dropped += 1;
            req.socket.destroy();
            return;
          }
          res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.headers);
          res.end(Buffer.concat(chunks));
        });
      },
    );
    forward.on("error", () => req.socket.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    dropNext: (path) => drops.push(path),
    dropped: () => dropped,
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

let server: TestServer;
let proxy: LossyProxy;
let receiver: Receiver;
beforeAll(async () => {
  server = await startTestServer();
  proxy = await startLossyProxy(server.baseUrl);
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
  await proxy.close();
  await server.close();
});

const clientFor = (m: { apiKey: string; secretKey: string }, baseUrl = server.baseUrl) =>
  new PaymentsClient({ baseUrl, apiKey: m.apiKey, secretKey: m.secretKey, maxRetries: 3, timeoutMs: 10_000 });

describe("PaymentsClient against the service", () => {
  it("reads the reference data, the merchant, and creates, reads and prices invoices", async () => {
    const m = await createMerchant(server, { merchantName: "SDK shop" });
    const client = clientFor(m);
    expect(await client.getVersion()).toMatch(/^\d+\.\d+\.\d+$/);
    const currencies = await client.listCurrencies();
    expect(currencies.map((c) => c.ticker)).toContain("USDT");
    expect((await client.listCountries()).length).toBeGreaterThan(100);
    expect(await client.me()).toMatchObject({ id: m.id, merchantName: "SDK shop" });

    const invoice = await client.createInvoice({ currency: "USDT", amount: "25.5", order_no: "sdk-order-1" });
    expect(invoice).toMatchObject({ status: "pending", amount: "25.5", order_no: "sdk-order-1", merchant_id: m.id });
    expect(await client.getInvoice(invoice.id)).toEqual(invoice);
    expect((await client.getInvoicesByOrderId("sdk-order-1")).map((i) => i.id)).toEqual([invoice.id]);
    const fees = await client.estimateFees({ currency: "USDT", amount: 100 });
    expect(fees.amount).toBe(100);
    expect(typeof fees.merchantReceiveAmount).toBe("number");
  });

  it("answers an unknown invoice with a typed 404 problem", async () => {
    const client = clientFor(await createMerchant(server));
    const error = await client.getInvoice("no-such-invoice").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PaymentsApiError);
    expect(error).toMatchObject({ status: 404, code: "invoice_not_found", attempts: 1 });
    expect((error as PaymentsApiError).problem).toMatchObject({ status: 404, code: "invoice_not_found" });
  });

  it("retries a withdrawal whose answer was lost: same request id, the original result, the balance debited once", async () => {
    const m = await fundedMerchant(server, "100");
    const client = clientFor(m, proxy.url);
    proxy.dropNext("/public/v1/withdrawals/create");
    const before = proxy.seen.length;
    const answer = await client.createWithdrawal({ currency: "USDT", amount: "10", withdrawalMethodId: m.methodId });
    expect(proxy.dropped()).toBeGreaterThanOrEqual(1);
    const attempts = proxy.seen.slice(before);
    expect(attempts).toHaveLength(2);
    expect(attempts.map((a) => a.requestId)).toEqual([answer.request.id, answer.request.id]);
    expect(answer.request).toMatchObject({ amount: "10", currency: "USDT", withdrawal_method_id: m.methodId });
    expect(await balanceOf(server, m.id)).toBe("90");
    // Sending the same operation again, on purpose, is still the one withdrawal.
    const again = await client.createWithdrawal(
      { currency: "USDT", amount: "10", withdrawalMethodId: m.methodId },
      { requestId: answer.request.id },
    );
    expect(again.request.id).toBe(answer.request.id);
    expect(again.request.created_at).toBe(answer.request.created_at);
    expect(await balanceOf(server, m.id)).toBe("90");
    await expectLedgerBalanced(server);
  });

  it("retries a fiat refund whose answer was lost, and the refund happens once", async () => {
    const m = await feeFreeMerchant(server);
    const invoice = await completedInvoice(server, m, { currency: "USD", amount: "40" });
    const client = clientFor(m, proxy.url);
    proxy.dropNext("/public/v1/refunds/refundFiat");
    const before = proxy.seen.length;
    const answer = await client.refundFiat({ invoiceId: invoice.id, reason: "customer asked" });
    expect(proxy.seen.slice(before).map((a) => a.requestId)).toEqual([answer.request.id, answer.request.id]);
    expect(answer.request).toMatchObject({ invoice_id: invoice.id, type: "fiat", amount: "40" });
    const second = await client.refundFiat({ invoiceId: invoice.id }).catch((e: unknown) => e);
    expect(second).toBeInstanceOf(PaymentsApiError);
    expect((second as PaymentsApiError).status).toBe(400);
    await expectLedgerBalanced(server);
  });

  it("does not retry a 400, nor a 409 for a request id reused with another body", async () => {
    const m = await fundedMerchant(server, "100");
    const client = clientFor(m, proxy.url);
    let before = proxy.seen.length;
    const invalid = await client
      .createWithdrawal({ currency: "USDT", amount: "100000", withdrawalMethodId: m.methodId })
      .catch((e: unknown) => e);
    expect(invalid).toBeInstanceOf(PaymentsApiError);
    expect((invalid as PaymentsApiError).status).toBe(400);
    expect(proxy.seen.length - before).toBe(1);

    const first = await client.createWithdrawal({ currency: "USDT", amount: "10", withdrawalMethodId: m.methodId });
    before = proxy.seen.length;
    const conflict = await client
      .createWithdrawal(
        { currency: "USDT", amount: "11", withdrawalMethodId: m.methodId },
        { requestId: first.request.id },
      )
      .catch((e: unknown) => e);
    expect(conflict).toBeInstanceOf(PaymentsApiError);
    expect(conflict).toMatchObject({
      status: 409,
      code: "request_id_reused",
      requestId: first.request.id,
      attempts: 1,
    });
    expect(proxy.seen.length - before).toBe(1);
    expect(await balanceOf(server, m.id)).toBe("90");
  });

  it("verifies the callbacks the service really sent, also across a secret rotation", async () => {
    const m = await createMerchant(server);
    const secret = (await admin(server, "GET", `/merchants/${m.id}/callback-secret`)).body.callbackSecret as string;
    const client = clientFor(m);
    const invoice = await client.createInvoice({ currency: "USDT", amount: "12", callbackUrl: receiver.url });
    const paid = await fetch(`${server.baseUrl}/sandbox/v1/invoices/${invoice.id}/payments`, {
      method: "POST",
      headers: { "x-api-key": m.apiKey, "content-type": "application/json" },
      body: "{}",
    });
    expect(paid.status).toBe(200);
    const before = receiver.received.length;
    for (let i = 0; i < 10 && (await server.workers.loops.callbacks!.runOnce()) > 0; i++);
    await waitFor(() => receiver.received.length > before);
    const delivered = receiver.received.slice(before);
    const event = verifyCallback(delivered[0]!.body, delivered[0]!.headers, secret);
    expect(event.type).toBe("invoice.completed");
    if (!event.type.startsWith("invoice.")) throw new Error("not an invoice event");
    expect((event.data as { invoice: { id: string } }).invoice.id).toBe(invoice.id);
    // A body changed in transit, or another merchant's secret, does not verify.
    expect(() => verifyCallback(delivered[0]!.body.replace("12", "13"), delivered[0]!.headers, secret)).toThrow();
    const other = await createMerchant(server);
    const otherSecret = (await admin(server, "GET", `/merchants/${other.id}/callback-secret`)).body.callbackSecret;
    expect(() => verifyCallback(delivered[0]!.body, delivered[0]!.headers, otherSecret)).toThrow();
    // During a rotation the receiver keeps both secrets: the old signature still verifies.
    const rotated = (await admin(server, "POST", `/merchants/${m.id}/callback-secret/rotate`)).body.callbackSecret;
    expect(rotated).not.toBe(secret);
    expect(verifyCallback(delivered[0]!.body, delivered[0]!.headers, [rotated, secret]).id).toBe(event.id);
  });
});
