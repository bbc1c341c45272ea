// Query strings on every GET route of every surface (product §18): a NUL or invalid UTF-8 in a name or value is 400 invalid_text, never a 500, on both stores.
import { connect } from "node:net";
import { beforeAll, describe, expect, it } from "vitest";
import { type DashboardClient, invitedUser } from "../support/dashboard.ts";
import { useTestServer } from "../support/fixture.ts";
import { createInvoice } from "../support/invoices.ts";
import { type Answer, call, createMerchant } from "../support/server.ts";

let apiKey: string;
let merchantId: string;
let invoiceId: string;
let owner: DashboardClient;

const server = useTestServer();
beforeAll(async () => {
  const m = await createMerchant(server);
  apiKey = m.apiKey;
  merchantId = m.id;
  invoiceId = (await createInvoice(server, apiKey, { currency: "USDT", amount: "10", order_no: "qt-1" })).id;
  owner = await invitedUser(server, merchantId, "owner");
});

/** Query parameter names the routes read (cursors, limits, filters), and one nobody reads. */
const NAMES = ["starting_after", "ending_before", "limit", "before", "status", "currency", "from", "to", "cursor", "x"];
/** Values that are not acceptable text once decoded: NUL, bytes that are not UTF-8, encoded surrogates, overlong forms, broken escapes. */
const BAD_VALUES = ["%FF", "%00", "a%00b", "%ED%A0%80", "%C0%AF", "%E2%82", "abc%F0%9F%98", "%G1", "%"];

/** A request path for a registered route: its parameters filled with real or plausible values. */
function pathOf(url: string): string {
  return url
    .replace(":id/", `${invoiceId}/`)
    .replace(/:id$/, url.startsWith("/admin/v1/merchants") ? merchantId : invoiceId)
    .replace(/:[A-Za-z_]+/g, "00000000-0000-0000-0000-000000000000")
    .replace("*", "index.html");
}

function headersFor(url: string): Record<string, string> {
  if (url.startsWith("/public/") || url.startsWith("/sandbox/")) return { "x-api-key": apiKey };
  if (url.startsWith("/admin/")) return { authorization: `Bearer ${server.adminToken}` };
  if (url.startsWith("/dashboard/v1/")) return { cookie: owner.cookie };
  return {};
}

function getRoutes(): string[] {
  return server.app.registeredRoutes.filter((r) => r.method === "GET").map((r) => r.url);
}

async function get(path: string, headers: Record<string, string>): Promise<Answer> {
  const controller = new AbortController();
  // The payer's event stream stays open when the request is accepted: the status line is enough.
  const response = await fetch(`${server.baseUrl}${path}`, { headers, signal: controller.signal, redirect: "manual" });
  const contentType = response.headers.get("content-type") ?? "";
  if (contentType.includes("event-stream")) {
    controller.abort();
    return { status: response.status, headers: response.headers, body: null, text: "" };
  }
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: contentType.includes("json") ? JSON.parse(text) : text,
    text,
  };
}

describe("query text", () => {
  it("every GET route answers 400 invalid_text to a NUL or invalid UTF-8 in a query name or value", async () => {
    const routes = getRoutes();
    expect(routes.length).toBeGreaterThan(40);
    const wrong: string[] = [];
    for (const url of routes) {
      const path = pathOf(url);
      const queries = [
        ...NAMES.map((name, i) => `${name}=${BAD_VALUES[i % BAD_VALUES.length]}`),
        ...BAD_VALUES.map((bad) => `starting_after=${bad}`),
        "limit=10&%FF=1",
        "x%00y=1",
      ];
      for (const query of queries) {
        const answer = await get(`${path}?${query}`, headersFor(url));
        if (answer.status !== 400 || (answer.body as { code?: string } | null)?.code !== "invalid_text")
          wrong.push(`${url}?${query} -> ${answer.status} ${answer.text.slice(0, 80)}`);
      }
    }
    expect(wrong).toEqual([]);
  }, 180_000);

  it("well-formed text in the query is left to the routes (no invalid_text, no 5xx)", async () => {
    for (const url of getRoutes()) {
      for (const query of ["limit=10", "starting_after=%C3%A9t%C3%A9", "q=%F0%9F%98%80+x", "a=b=c&&d"]) {
        const answer = await get(`${pathOf(url)}?${query}`, headersFor(url));
        expect(answer.status, `${url}?${query}`).toBeLessThan(500);
        expect((answer.body as { code?: string } | null)?.code, `${url}?${query}`).not.toBe("invalid_text");
      }
    }
    const listed = await call(server.baseUrl, "GET", "/public/v1/invoices?limit=10", {
      headers: { "x-api-key": apiKey },
    });
    expect(listed.status).toBe(200);
  }, 180_000);

  it("a raw byte that is not UTF-8 in the request target is invalid_text too", async () => {
    const { port } = new URL(server.baseUrl);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), "127.0.0.1", () => {
        socket.write(
          Buffer.concat([
            Buffer.from("GET /public/v1/invoices?starting_after="),
            Buffer.from([0xff, 0xfe]),
            Buffer.from(` HTTP/1.1\r\nhost: x\r\nx-api-key: ${apiKey}\r\nconnection: close\r\n\r\n`),
          ]),
        );
      });
      let text = "";
      socket.on("data", (chunk) => {
        text += chunk.toString("latin1");
      });
      socket.on("end", () => resolve(text));
      socket.on("error", reject);
    });
    // Node's parser may refuse such a target itself (400); when it passes it on, the service refuses it.
    expect(answer).toMatch(/^HTTP\/1\.1 400/);
    if (answer.includes("application/problem+json")) expect(answer).toContain('"code":"invalid_text"');
  });
});
