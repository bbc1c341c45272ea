// `payments mcp`: a Model Context Protocol server on stdio that lets an AI assistant read a merchant's business, create invoices and payment links and cancel subscriptions, through the SDK.
import { readFileSync } from "node:fs";
import {
  type EventListParams,
  type InvoiceStatus,
  PaymentsApiError,
  type PaymentsClient,
  PaymentsConnectionError,
  type RefundRequest,
  type SubscriptionStatus,
  type WithdrawalRequest,
} from "@merchant-payments/sdk";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import * as z from "zod";
import { hideSecrets } from "./output.ts";

/** Where the server says what it does: stderr, since stdout carries only protocol messages. */
type Log = (line: string) => void;

const INVOICE_STATUSES = [
  "pending",
  "processing",
  "completed",
  "refund_processing",
  "failed",
  "expired",
  "refunded",
  "aml_check",
  "aml_block",
] as const satisfies readonly InvoiceStatus[];

const decimal = z
  .string()
  .regex(/^[0-9]+(\.[0-9]+)?$/, "a plain decimal string such as 100 or 25.5")
  .describe("a plain decimal string in the currency's units, e.g. 25.5");
const ticker = z.string().min(1).describe("a currency ticker from list_currencies, e.g. USDT");
const id = (what: string) => z.string().min(1).describe(`the ${what}'s id`);
const url = (what: string) => z.string().url().optional().describe(what);

/** The paging and date filters every list takes; a list answers one page, `{ data, has_more }`. */
const paging = {
  limit: z.number().int().min(1).max(100).optional().describe("at most this many (1-100, default 20)"),
  starting_after: z.string().optional().describe("the last id of the previous page, to read the next one"),
  created_gte: z.string().datetime({ offset: true }).optional().describe("created at or after (RFC 3339)"),
  created_lt: z.string().datetime({ offset: true }).optional().describe("created before (RFC 3339)"),
};

const SUBSCRIPTION_STATUSES = [
  "incomplete",
  "trialing",
  "active",
  "past_due",
  "unpaid",
  "canceled",
] as const satisfies readonly SubscriptionStatus[];

const READ = { readOnlyHint: true, openWorldHint: false } as const;
const CREATE = { readOnlyHint: false, destructiveHint: false, openWorldHint: false } as const;

/** Drops the arguments the assistant left out, so the SDK sends only what was given. */
function given<T extends Record<string, unknown>>(args: T): T {
  return Object.fromEntries(Object.entries(args).filter(([, value]) => value !== undefined)) as T;
}

/** A tool's answer as text JSON; an API error or no answer is a tool error with its code and detail, never a crash. */
async function answer(tool: string, log: Log, work: () => Promise<unknown>): Promise<CallToolResult> {
  try {
    const value = hideSecrets(await work(), false, { json: true });
    log(`mcp: ${tool} ok`);
    return { content: [{ type: "text", text: JSON.stringify(value, null, 2) }] };
  } catch (error) {
    const problem = toolProblem(error);
    log(`mcp: ${tool} failed: ${problem.code}`);
    return { isError: true, content: [{ type: "text", text: JSON.stringify(problem, null, 2) }] };
  }
}

function toolProblem(error: unknown): Record<string, unknown> {
  if (error instanceof PaymentsApiError) {
    const problem = error.problem ?? { status: error.status, code: error.code, detail: error.message };
    return error.requestId ? { ...problem, requestId: error.requestId } : { ...problem };
  }
  if (error instanceof PaymentsConnectionError) return { code: error.code, detail: error.message };
  // The SDK refuses bad arguments (TypeError, RangeError) before any request.
  if (error instanceof TypeError || error instanceof RangeError)
    return { code: "invalid_arguments", detail: error.message };
  return { code: "internal_error", detail: error instanceof Error ? error.message : String(error) };
}

function registerInvoiceTools(server: McpServer, client: PaymentsClient, log: Log): void {
  server.registerTool(
    "list_invoices",
    {
      description:
        "The merchant's invoices, newest first, one page: what each asked (amount, currency), what was paid " +
        "(paid_amount, status completed once paid) and the payer's page (invoice_url).",
      inputSchema: {
        ...paging,
        status: z.enum(INVOICE_STATUSES).optional().describe("only invoices in this status"),
        payment_link_id: z.string().optional().describe("only the invoices this payment link made"),
      },
      annotations: READ,
    },
    ({ payment_link_id, ...args }) =>
      answer("list_invoices", log, () => client.listInvoicesPage(given({ ...args, paymentLinkId: payment_link_id }))),
  );
  server.registerTool(
    "get_invoice",
    { description: "One invoice in its current state.", inputSchema: { invoice_id: id("invoice") }, annotations: READ },
    ({ invoice_id }) => answer("get_invoice", log, () => client.getInvoice(invoice_id)),
  );
  server.registerTool(
    "find_invoices_by_order",
    {
      description: "The invoices that carry the merchant's own order number.",
      inputSchema: { order_no: z.string().min(1).describe("the merchant's order number") },
      annotations: READ,
    },
    ({ order_no }) => answer("find_invoices_by_order", log, () => client.getInvoicesByOrderId(order_no)),
  );
  server.registerTool(
    "create_invoice",
    {
      description:
        "Create an invoice for a payer to pay; the answer holds its id and invoice_url, the page to send the payer. " +
        "Give an idempotency_key to be able to retry without creating a second invoice.",
      inputSchema: {
        currency: ticker,
        amount: decimal,
        order_no: z.string().optional().describe("the merchant's order number"),
        description: z.string().optional().describe("what is paid for, shown to the payer"),
        type: z.enum(["b2c", "b2b"]).optional().describe("b2c (default) or b2b"),
        expires_at: z.string().datetime({ offset: true }).optional().describe("RFC 3339, at most 30 days ahead"),
        callback_url: url("where the invoice's status changes are POSTed"),
        success_url: url("where the payer goes after paying"),
        return_url: url("where the payer goes back to the shop"),
        fail_url: url("where the payer goes when paying fails"),
        idempotency_key: z.string().min(1).max(255).optional().describe("at most one invoice per key"),
      },
      annotations: CREATE,
    },
    ({ expires_at, callback_url, idempotency_key, ...args }) =>
      answer("create_invoice", log, () =>
        client.createInvoice(
          given({ ...args, expiresAt: expires_at, callbackUrl: callback_url, idempotencyKey: idempotency_key }),
        ),
      ),
  );
}

function registerPaymentLinkTools(server: McpServer, client: PaymentsClient, log: Log): void {
  const { limit, starting_after, created_gte, created_lt } = paging;
  server.registerTool(
    "list_payment_links",
    {
      description: "The merchant's payment links (reusable pages that make an invoice per payer), newest first.",
      inputSchema: { limit, starting_after, created_gte, created_lt },
      annotations: READ,
    },
    (args) => answer("list_payment_links", log, () => client.listPaymentLinksPage(given(args))),
  );
  server.registerTool(
    "get_payment_link",
    { description: "One payment link.", inputSchema: { link_id: id("payment link") }, annotations: READ },
    ({ link_id }) => answer("get_payment_link", log, () => client.getPaymentLink(link_id)),
  );
  server.registerTool(
    "create_payment_link",
    {
      description:
        "Create a payment link: a fixed amount, or a range (min_amount and max_amount) the payer chooses in. " +
        "The answer's url is the page to share. Not idempotent: each call makes a new link.",
      inputSchema: {
        currency: ticker,
        amount: decimal.optional(),
        min_amount: decimal.optional(),
        max_amount: decimal.optional(),
        description: z.string().optional().describe("what is paid for, shown to the payer"),
        callback_url: url("where the invoices' status changes are POSTed"),
        success_url: url("where the payer goes after paying"),
        return_url: url("where the payer goes back to the shop"),
        fail_url: url("where the payer goes when paying fails"),
      },
      annotations: CREATE,
    },
    (args) =>
      answer("create_payment_link", log, () =>
        client.createPaymentLink(
          given({
            currency: args.currency,
            amount: args.amount,
            minAmount: args.min_amount,
            maxAmount: args.max_amount,
            description: args.description,
            callbackUrl: args.callback_url,
            successUrl: args.success_url,
            returnUrl: args.return_url,
            failUrl: args.fail_url,
          }),
        ),
      ),
  );
}

function registerSubscriptionTools(server: McpServer, client: PaymentsClient, log: Log): void {
  const { limit, starting_after, created_gte, created_lt } = paging;
  server.registerTool(
    "list_plans",
    {
      description:
        "The merchant's subscription plans, newest first: a price per period (interval and intervalCount), " +
        "trialDays, graceDays, and whether the plan is active (takes new subscriptions).",
      inputSchema: { limit, starting_after, created_gte, created_lt },
      annotations: READ,
    },
    (args) => answer("list_plans", log, () => client.listPlansPage(given(args))),
  );
  server.registerTool(
    "list_subscriptions",
    {
      description:
        "The merchant's subscriptions, newest first, one page: the customer, planId, status, the current period " +
        "and the open invoice (the period's invoice to pay, with its url).",
      inputSchema: {
        ...paging,
        status: z.enum(SUBSCRIPTION_STATUSES).optional().describe("only subscriptions in this status"),
        plan_id: z.string().optional().describe("only the subscriptions of this plan"),
        customer: z.string().optional().describe("only this customer's, by the merchant's reference"),
      },
      annotations: READ,
    },
    ({ plan_id, ...args }) =>
      answer("list_subscriptions", log, () => client.listSubscriptionsPage(given({ ...args, planId: plan_id }))),
  );
  server.registerTool(
    "get_subscription",
    {
      description: "One subscription in its current state, with its open invoice.",
      inputSchema: { subscription_id: id("subscription") },
      annotations: READ,
    },
    ({ subscription_id }) => answer("get_subscription", log, () => client.getSubscription(subscription_id)),
  );
  server.registerTool(
    "cancel_subscription",
    {
      description:
        "Cancel a subscription: now (its open invoice is closed and it is canceled at once), or with " +
        "at_period_end when its current period ends. Cancelling a canceled subscription changes nothing.",
      inputSchema: {
        subscription_id: id("subscription"),
        at_period_end: z.boolean().optional().describe("true: at the current period's end; default false: now"),
      },
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
    },
    ({ subscription_id, at_period_end }) =>
      answer("cancel_subscription", log, () =>
        client.cancelSubscription(subscription_id, { atPeriodEnd: at_period_end === true }),
      ),
  );
}

function registerAccountTools(server: McpServer, client: PaymentsClient, log: Log): void {
  server.registerTool(
    "get_merchant",
    { description: "The merchant this server acts for: id, name, e-mail, website.", annotations: READ },
    () => answer("get_merchant", log, () => client.me()),
  );
  server.registerTool(
    "get_balances",
    {
      description: "The merchant's available balance in every currency, per network (what it may withdraw).",
      annotations: READ,
    },
    () => answer("get_balances", log, () => client.getBalances()),
  );
  server.registerTool(
    "list_currencies",
    { description: "The currencies invoices can be made in: ticker, name, network.", annotations: READ },
    () => answer("list_currencies", log, () => client.listCurrencies()),
  );
  server.registerTool(
    "list_events",
    {
      description:
        "The merchant's events (invoice, withdrawal, refund and subscription changes), newest first, each as its callback body.",
      inputSchema: {
        ...paging,
        type: z.string().optional().describe("only this type, e.g. invoice.completed or withdrawal.failed"),
      },
      annotations: READ,
    },
    ({ type, ...args }) =>
      answer("list_events", log, () =>
        client.listEventsPage(given({ ...args, type: type as EventListParams["type"] })),
      ),
  );
  const statusPaging = { ...paging, status: z.string().optional().describe("only this status") };
  server.registerTool(
    "list_withdrawals",
    { description: "The merchant's withdrawals, newest first.", inputSchema: statusPaging, annotations: READ },
    ({ status, ...args }) =>
      answer("list_withdrawals", log, () =>
        client.listWithdrawalsPage(given({ ...args, status: status as WithdrawalRequest["status"] | undefined })),
      ),
  );
  server.registerTool(
    "list_refunds",
    { description: "The merchant's refunds, newest first.", inputSchema: statusPaging, annotations: READ },
    ({ status, ...args }) =>
      answer("list_refunds", log, () =>
        client.listRefundsPage(given({ ...args, status: status as RefundRequest["status"] | undefined })),
      ),
  );
}

/** The server with its tools; nothing is connected yet. */
export function mcpServer(client: PaymentsClient, log: Log): McpServer {
  const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  const server = new McpServer(
    { name: "merchant-payments", version: manifest.version },
    {
      instructions:
        "Tools of a merchant's payment service account: read its invoices, payment links, subscriptions, " +
        "withdrawals, refunds and events; create invoices and payment links; cancel subscriptions. Amounts are " +
        "decimal strings in the currency's units.",
    },
  );
  registerAccountTools(server, client, log);
  registerInvoiceTools(server, client, log);
  registerPaymentLinkTools(server, client, log);
  registerSubscriptionTools(server, client, log);
  return server;
}

/** Serves the tools on stdin/stdout until stdin ends (the client went away) or `signal` aborts. */
export async function serveMcp(
  client: PaymentsClient,
  ctx: { log: Log; signal: AbortSignal; baseUrl: string },
): Promise<void> {
  const server = mcpServer(client, ctx.log);
  const ended = new Promise<void>((resolve) => {
    process.stdin.once("end", resolve);
    process.stdin.once("close", resolve);
    ctx.signal.addEventListener("abort", () => resolve(), { once: true });
  });
  await server.connect(new StdioServerTransport());
  ctx.log(`payments mcp: serving the merchant of this API key at ${ctx.baseUrl} over stdio (logs on stderr)`);
  await ended;
  await server.close();
}
