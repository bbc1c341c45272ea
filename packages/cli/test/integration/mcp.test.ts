// `payments mcp` driven by the official MCP client over stdio, against the real service: the tools, an invoice made through a tool, API errors as tool errors.
import { fileURLToPath } from "node:url";
import { PaymentsClient } from "@merchant-payments/sdk";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { feeFreeMerchant } from "../../../../test/support/refunds.ts";
import { merchant, startTestServer, type TestServer } from "../../../../test/support/server.ts";
import { signedCall } from "../../../../test/support/signing.ts";

const BIN = fileURLToPath(new URL("../../bin/payments.js", import.meta.url));

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

/** A connected MCP client of `payments mcp` run with this API key; `stderr()` is what the server logged. */
async function connect(apiKey: string): Promise<{ client: Client; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, "mcp"],
    env: { PATH: process.env.PATH ?? "", PAYMENTS_BASE_URL: server.baseUrl, PAYMENTS_API_KEY: apiKey },
    stderr: "pipe",
  });
  let logged = "";
  transport.stderr?.on("data", (chunk: Buffer) => {
    logged += chunk.toString("utf8");
  });
  const client = new Client({ name: "mcp-test", version: "1.0.0" });
  await client.connect(transport);
  return { client, stderr: () => logged };
}

type ToolAnswer = { isError?: boolean; content: { type: string; text?: string }[] };

/** The JSON a tool answered (its one text content). */
function body<T = Record<string, unknown>>(answer: ToolAnswer): T {
  const text = answer.content.find((c) => c.type === "text")?.text;
  if (text === undefined) throw new Error(`no text in ${JSON.stringify(answer)}`);
  return JSON.parse(text) as T;
}

describe("payments mcp", { timeout: 60_000 }, () => {
  it("lists its tools, creates an invoice that the API then holds, and answers API errors as tool errors", async () => {
    const m = await feeFreeMerchant(server);
    const { client, stderr } = await connect(m.apiKey);
    try {
      const { tools } = await client.listTools();
      const names = tools.map((t) => t.name);
      for (const name of ["list_invoices", "get_invoice", "create_invoice", "list_payment_links"])
        expect(names).toContain(name);
      expect(names).toEqual(expect.arrayContaining(["create_payment_link", "list_events", "get_merchant"]));
      for (const tool of tools) expect(tool.description?.length).toBeGreaterThan(10);
      const create = tools.find((t) => t.name === "create_invoice")!;
      expect(create.inputSchema.required).toEqual(expect.arrayContaining(["currency", "amount"]));

      const created = (await client.callTool({
        name: "create_invoice",
        arguments: { currency: "USDT", amount: "25.5", order_no: "mcp-1", description: "Mug" },
      })) as ToolAnswer;
      expect(created.isError).toBeFalsy();
      const invoice = body<{ id: string; invoice_url: string }>(created);
      const sdk = new PaymentsClient({ baseUrl: server.baseUrl, apiKey: m.apiKey });
      expect(await sdk.getInvoice(invoice.id)).toMatchObject({
        id: invoice.id,
        amount: "25.5",
        currency: "USDT",
        order_no: "mcp-1",
        status: "pending",
      });
      const listed = body<{ data: { id: string }[] }>(
        (await client.callTool({ name: "list_invoices", arguments: { limit: 5 } })) as ToolAnswer,
      );
      expect(listed.data.map((i) => i.id)).toEqual([invoice.id]);

      const missing = (await client.callTool({
        name: "get_invoice",
        arguments: { invoice_id: "00000000-0000-4000-8000-000000000000" },
      })) as ToolAnswer;
      expect(missing.isError).toBe(true);
      expect(body(missing)).toMatchObject({ status: 404, code: "invoice_not_found", detail: expect.any(String) });
      const unknown = (await client.callTool({
        name: "create_invoice",
        arguments: { currency: "NOPE", amount: "1" },
      })) as ToolAnswer;
      expect(unknown.isError).toBe(true);
      expect(body(unknown)).toMatchObject({
        status: 400,
        code: expect.any(String),
        detail: expect.stringContaining("NOPE"),
      });
      expect(await sdk.listInvoicesPage()).toMatchObject({ data: [{ id: invoice.id }] });

      // The server still answers after the errors, and its log names tools, never the key.
      expect((await client.callTool({ name: "get_merchant", arguments: {} })).isError).toBeFalsy();
      const balances = await client.callTool({ name: "get_balances", arguments: {} });
      expect(balances.isError).toBeFalsy();
      expect(JSON.stringify(balances.content)).toContain("available");
      expect(stderr()).toContain("create_invoice ok");
      expect(stderr()).not.toContain(m.apiKey);
    } finally {
      await client.close();
    }
  });

  it("creates and lists payment links", async () => {
    const m = await feeFreeMerchant(server);
    const { client } = await connect(m.apiKey);
    try {
      const link = body<{ id: string; url: string; min_amount: string }>(
        (await client.callTool({
          name: "create_payment_link",
          arguments: { currency: "USDT", min_amount: "5", max_amount: "50", description: "Tips" },
        })) as ToolAnswer,
      );
      expect(link).toMatchObject({ min_amount: "5", max_amount: "50", description: "Tips", active: true });
      const links = body<{ data: { id: string }[] }>(
        (await client.callTool({ name: "list_payment_links", arguments: {} })) as ToolAnswer,
      );
      expect(links.data.map((l) => l.id)).toEqual([link.id]);
    } finally {
      await client.close();
    }
  });

  it("lists plans and subscriptions, reads one, and cancels it at its period's end", async () => {
    const m = await feeFreeMerchant(server);
    const plan = await merchant(server, m.apiKey, "POST", "/public/v1/plans", {
      name: "Pro",
      currency: "USDT",
      amount: "10",
      interval: "month",
    });
    const { answer: created } = await signedCall(server.baseUrl, {
      apiKey: m.apiKey,
      secret: m.secretKey,
      path: "/public/v1/subscriptions",
      body: { planId: plan.body.id, customer: { reference: "cust-1" } },
    });
    expect(created.status).toBe(200);
    const { client } = await connect(m.apiKey);
    try {
      const call = async (name: string, args: Record<string, unknown>) =>
        body<any>((await client.callTool({ name, arguments: args })) as ToolAnswer);
      expect((await call("list_plans", {})).data.map((p: { id: string }) => p.id)).toEqual([plan.body.id]);
      const listed = await call("list_subscriptions", { status: "incomplete", customer: "cust-1" });
      expect(listed.data.map((s: { id: string }) => s.id)).toEqual([created.body.id]);
      expect(await call("get_subscription", { subscription_id: created.body.id })).toEqual(created.body);
      const later = await call("cancel_subscription", { subscription_id: created.body.id, at_period_end: true });
      expect(later).toMatchObject({ id: created.body.id, cancelAtPeriodEnd: true, status: "incomplete" });
      const missing = (await client.callTool({
        name: "cancel_subscription",
        arguments: { subscription_id: "nope" },
      })) as ToolAnswer;
      expect(missing.isError).toBe(true);
      expect(body(missing)).toMatchObject({ status: 404, code: "subscription_not_found" });
    } finally {
      await client.close();
    }
  });
});
