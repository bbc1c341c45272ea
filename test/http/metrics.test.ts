// GET /metrics: Prometheus text behind METRICS_TOKEN or the admin token, figures that follow the operations, bounded labels, and a scrape that survives a store that is gone.
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { useTestServer } from "../support/fixture.ts";
import { call, expectProblem, merchant, startTestServer, type TestServer } from "../support/server.ts";
import { fundedMerchant, withdraw } from "../support/withdrawals.ts";

const METRICS_TOKEN = `metrics-${randomUUID()}`;

const server = useTestServer({ env: { METRICS_TOKEN } });

async function scrape(target: TestServer = server, token = METRICS_TOKEN): Promise<string> {
  const answer = await call(target.baseUrl, "GET", "/metrics", { headers: { authorization: `Bearer ${token}` } });
  expect(answer.status, answer.text).toBe(200);
  expect(answer.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return answer.text;
}

/** The value of one sample (`name{labels}`, labels in registration order), or undefined when absent. */
function sample(text: string, series: string): number | undefined {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe("GET /metrics", () => {
  it("refuses a scrape without a token or with a wrong one (401 problem)", async () => {
    expectProblem(await call(server.baseUrl, "GET", "/metrics"), 401, "invalid_metrics_token");
    const wrong = await call(server.baseUrl, "GET", "/metrics", {
      headers: { authorization: `Bearer ${METRICS_TOKEN}x` },
    });
    expectProblem(wrong, 401, "invalid_metrics_token");
    const basic = await call(server.baseUrl, "GET", "/metrics", {
      headers: { authorization: `Basic ${METRICS_TOKEN}` },
    });
    expectProblem(basic, 401, "invalid_metrics_token");
  });

  it("answers Prometheus text to METRICS_TOKEN and to the admin token", async () => {
    for (const token of [METRICS_TOKEN, server.adminToken]) {
      const text = await scrape(server, token);
      expect(text).toContain("# TYPE payments_http_request_duration_seconds histogram");
      expect(sample(text, "payments_store_up")).toBe(1);
      expect(text).toContain("# TYPE payments_callback_queue_depth gauge");
      expect(text).toContain("payments_process_cpu_user_seconds_total");
    }
    const text = await scrape();
    // A part that is not configured has no gauge: an alert on it can never fire (no provider, no list here).
    expect(sample(text, "payments_screening_sources")).toBe(0);
    expect(text).not.toContain("payments_screening_provider_up");
    expect(text).not.toContain("payments_screening_list_entries");
    if (server.ctx.store.dialect === "postgres") {
      expect(sample(text, 'payments_db_pool_connections{state="total"}')).toBeGreaterThan(0);
      expect(sample(text, 'payments_db_pool_connections{state="waiting"}')).toBe(0);
    } else {
      expect(sample(text, "payments_sqlite_commit_queue_length")).toBe(0);
    }
  });

  it("counts operations by outcome, open payouts by state and latency per route pattern", async () => {
    const before = await scrape();
    const m = await fundedMerchant(server, "25");
    for (let i = 0; i < 2; i++) expect((await withdraw(server, m, { amount: "10" })).answer.status).toBe(200);
    const refused = await withdraw(server, m, { amount: "10" });
    expectProblem(refused.answer, 400, "insufficient_balance");
    const invoice = await merchant(server, m.apiKey, "POST", "/public/v1/invoices/create", {
      currency: "USDT",
      amount: "5",
      order_no: "metrics-1",
    });
    expect(invoice.status).toBe(200);
    const missing = await merchant(server, m.apiKey, "GET", `/public/v1/invoices/${randomUUID()}`);
    expect(missing.status).toBe(404);

    const after = await scrape();
    const delta = (series: string) => (sample(after, series) ?? 0) - (sample(before, series) ?? 0);
    expect(delta('payments_operations_total{operation="withdrawal",outcome="accepted"}')).toBe(2);
    expect(delta('payments_operations_total{operation="withdrawal",outcome="insufficient_balance"}')).toBe(1);
    expect(delta('payments_operations_total{operation="invoice_create",outcome="accepted"}')).toBe(1);
    // The workers do not run in this test server, so accepted payouts stay queued.
    expect(delta('payments_payouts{state="queued"}')).toBe(2);
    expect(
      delta(
        'payments_http_request_duration_seconds_count{method="POST",route="/public/v1/withdrawals/create",status_code="200"}',
      ),
    ).toBe(2);
    // The pattern, not the id: one series for every invoice looked up.
    expect(
      delta(
        'payments_http_request_duration_seconds_count{method="GET",route="/public/v1/invoices/:id",status_code="404"}',
      ),
    ).toBe(1);
    expect(after).not.toContain(invoice.body.id);
  });

  it("collapses unknown URLs into one route label", async () => {
    const paths = Array.from({ length: 40 }, () => `/nowhere/${randomUUID()}`);
    for (const path of paths) expect((await call(server.baseUrl, "GET", path)).status).toBe(404);
    const text = await scrape();
    for (const path of paths) expect(text).not.toContain(path);
    const routes = new Set(
      text
        .split("\n")
        .filter((l) => l.startsWith("payments_http_request_duration_seconds_count{"))
        .map((l) => /route="([^"]*)"/.exec(l)?.[1]),
    );
    expect(routes.has("unmatched")).toBe(true);
    // Every label is a registered route pattern or "unmatched".
    const patterns = new Set(server.app.registeredRoutes.map((r) => r.url));
    for (const route of routes) expect(route === "unmatched" || patterns.has(route ?? ""), route).toBe(true);
    expect(
      sample(text, 'payments_http_request_duration_seconds_count{method="GET",route="unmatched",status_code="404"}'),
    ).toBeGreaterThanOrEqual(40);
  });

  it("counts pending callbacks and their age", async () => {
    const m = await fundedMerchant(server, "0");
    const created = await merchant(server, m.apiKey, "POST", "/public/v1/invoices/create", {
      currency: "USDT",
      amount: "5",
      order_no: "metrics-callback",
      callbackUrl: "http://127.0.0.1:9/cb",
    });
    expect(created.status, created.text).toBe(200);
    const before = await scrape();
    const paid = await merchant(server, m.apiKey, "POST", `/sandbox/v1/invoices/${created.body.id}/payments`, {
      fromAddress: "0xpayer",
    });
    expect(paid.status, paid.text).toBe(200);
    const after = await scrape();
    expect(
      (sample(after, "payments_callback_queue_depth") ?? 0) - (sample(before, "payments_callback_queue_depth") ?? 0),
    ).toBeGreaterThan(0);
    expect(sample(after, "payments_callback_oldest_pending_age_seconds")).toBeGreaterThanOrEqual(0);
    // An attempt to a port nobody listens on: counted, and the event stays pending for its retry.
    const callbacks = server.workers.loops.callbacks;
    if (!callbacks) throw new Error("no callbacks loop");
    expect(await callbacks.runOnce()).toBeGreaterThan(0);
    const attempted = await scrape();
    const retries = (text: string) => sample(text, 'payments_callback_attempts_total{outcome="retry_scheduled"}') ?? 0;
    expect(retries(attempted) - retries(after)).toBeGreaterThan(0);
    expect(sample(attempted, "payments_callback_queue_depth")).toBe(sample(after, "payments_callback_queue_depth"));
  });

  it("still answers when the store is gone, with store_up 0", async () => {
    const other = await startTestServer();
    try {
      expect(sample(await scrape(other, other.adminToken), "payments_store_up")).toBe(1);
      await other.ctx.store.close();
      const text = await scrape(other, other.adminToken);
      expect(sample(text, "payments_store_up")).toBe(0);
      expect(text).toContain("payments_http_request_duration_seconds_count");
    } finally {
      await other.app.close();
      await other.database.drop();
    }
  });
});
