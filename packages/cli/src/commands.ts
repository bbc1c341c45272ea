// The CLI's commands: a table that the parser, the help text and the tests all read.
import { createHmac } from "node:crypto";
import type { CreatePlanParams, PaymentsClient, PaymentsEvent } from "@merchant-payments/sdk";
import { type AdminClient, seg } from "./admin.ts";
import { serveMcp } from "./mcp.ts";

export class UsageError extends Error {}

export type OptionSpec = { type: "string" | "boolean"; description: string; required?: boolean };

export interface Context {
  args: string[];
  options: Record<string, string | boolean | undefined>;
  admin(): AdminClient;
  merchant(): PaymentsClient;
  /** For long-running commands: prints a line as it happens. */
  log(line: string): void;
  /** For `listen`: stops when aborted (SIGINT). */
  signal: AbortSignal;
  /** The service's base URL the command talks to. */
  baseUrl: string;
}

export interface Command {
  name: string;
  summary: string;
  /** Positional arguments, by name, all required. */
  args?: string[];
  options?: Record<string, OptionSpec>;
  /** Table columns for lists (else every field). */
  columns?: string[];
  /**
   * Secrets the answer holds that the service shows only this once (a new key's secret key): printed
   * plainly, without --show-secrets, with a warning on stderr that they will not be shown again.
   */
  showsOnce?: string[];
  /** Its stdout belongs to a protocol (`mcp`): no answer is printed after it runs. */
  printsNothing?: boolean;
  run(ctx: Context): Promise<unknown>;
}

const str = (ctx: Context, name: string): string | undefined => {
  const value = ctx.options[name];
  return typeof value === "string" ? value : undefined;
};

const opt = (description: string, required = false): OptionSpec => ({ type: "string", description, required });
const flag = (description: string): OptionSpec => ({ type: "boolean", description });

/** Only the options that were given, renamed to the API's field names. */
function pick(ctx: Context, names: Record<string, string>): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [option, field] of Object.entries(names)) {
    const value = ctx.options[option];
    if (value !== undefined) body[field] = value;
  }
  return body;
}

/** A comma-separated option as a list (blanks dropped); undefined when not given. */
function list(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const items = value
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
  if (items.length === 0) throw new UsageError("give at least one comma-separated value");
  return items;
}

function integer(value: string | undefined, name: string): number {
  if (value === undefined || !/^[0-9]{1,15}$/.test(value)) throw new UsageError(`--${name} must be a whole number`);
  return Number(value);
}

const merchantFields = {
  name: "merchantName",
  "director-name": "directorName",
  website: "website",
  logo: "logo",
  "fee-percent": "feePercent",
  "fees-paid-by": "feesPaidBy",
};
const merchantOptions = {
  name: opt("merchant name"),
  "director-name": opt("director's name"),
  website: opt("website"),
  logo: opt("logo URL"),
  "fee-percent": opt("fee percent, e.g. 1.5"),
  "fees-paid-by": opt("merchant or payer"),
  whitelabeling: flag("white-label the payer's page"),
};
const invoiceColumns = ["id", "status", "currency", "amount", "paid_amount", "order_no", "created_at"];
const requestColumns = ["id", "status", "currency", "amount", "payout_processor_status", "created_at"];
const depositAddressColumns = ["id", "customer", "currency", "address", "networks", "active", "createdAt"];
const signedOption = { "request-id": opt("request id (UUID) of this operation; reuse it to retry safely") };

export const commands: Command[] = [
  // Operator API.
  {
    name: "merchants create",
    summary: "create a merchant (operator)",
    options: { email: opt("e-mail address", true), ...merchantOptions },
    run: (ctx) =>
      ctx.admin().call("POST", "/merchants", {
        email: str(ctx, "email"),
        ...pick(ctx, merchantFields),
        ...(ctx.options.whitelabeling ? { whitelabeling: true } : {}),
      }),
  },
  {
    name: "merchants get",
    summary: "show a merchant (operator)",
    args: ["merchant-id"],
    run: (ctx) => ctx.admin().call("GET", `/merchants/${seg(ctx.args[0]!)}`),
  },
  {
    name: "merchants update",
    summary: "change a merchant's fields or status (operator)",
    args: ["merchant-id"],
    options: { ...merchantOptions, email: opt("e-mail address"), status: opt("active or suspended") },
    run: (ctx) => {
      const body = { ...pick(ctx, { ...merchantFields, email: "email", status: "status" }) };
      if (ctx.options.whitelabeling) body.whitelabeling = true;
      if (Object.keys(body).length === 0) throw new UsageError("give at least one field to change");
      return ctx.admin().call("PATCH", `/merchants/${seg(ctx.args[0]!)}`, body);
    },
  },
  {
    name: "merchants callback-secret",
    summary: "the merchant's callback secret (hidden unless --show-secrets)",
    args: ["merchant-id"],
    run: (ctx) => ctx.admin().call("GET", `/merchants/${seg(ctx.args[0]!)}/callback-secret`),
  },
  {
    name: "merchants rotate-callback-secret",
    summary: "replace the merchant's callback secret (hidden unless --show-secrets)",
    args: ["merchant-id"],
    run: (ctx) => ctx.admin().call("POST", `/merchants/${seg(ctx.args[0]!)}/callback-secret/rotate`),
  },
  {
    name: "merchants default-callback-url",
    summary: "show, set (--url) or clear (--clear) where the merchant's withdrawal and refund events are delivered",
    args: ["merchant-id"],
    options: { url: opt("an http(s) URL"), clear: flag("remove the default callback URL") },
    run: (ctx) => {
      const path = `/merchants/${seg(ctx.args[0]!)}/default-callback-url`;
      const url = str(ctx, "url");
      if (url !== undefined && ctx.options.clear) throw new UsageError("give --url or --clear, not both");
      if (url !== undefined) return ctx.admin().call("PUT", path, { callbackUrl: url });
      if (ctx.options.clear) return ctx.admin().call("PUT", path, { callbackUrl: null });
      return ctx.admin().call("GET", path);
    },
  },
  {
    name: "api-keys create",
    summary: "issue an API key; its secret key is printed this once and never shown again",
    args: ["merchant-id"],
    options: {
      legacy: flag("a legacy key, without a secret (no signed operations)"),
      scopes: opt("comma-separated scopes, e.g. invoices:write,read (default: a full key)"),
      "allowed-addresses": opt("comma-separated client address ranges (CIDR), e.g. 10.0.0.0/8 (default: anywhere)"),
    },
    showsOnce: ["secretKey"],
    run: (ctx) => {
      const body: Record<string, unknown> = ctx.options.legacy ? { legacy: true } : {};
      const scopes = list(str(ctx, "scopes"));
      const ranges = list(str(ctx, "allowed-addresses"));
      if (scopes) body.scopes = scopes;
      if (ranges) body.allowedAddresses = ranges;
      return ctx.admin().call("POST", `/merchants/${seg(ctx.args[0]!)}/api-keys`, body);
    },
  },
  {
    name: "api-keys list",
    summary: "a merchant's API keys: scopes, allowed addresses, last use (never a key or its secret)",
    args: ["merchant-id"],
    columns: ["id", "prefix", "scopes", "allowedAddresses", "lastUsedAt", "lastUsedFrom", "revokedAt"],
    run: (ctx) => ctx.admin().call("GET", `/merchants/${seg(ctx.args[0]!)}/api-keys`),
  },
  {
    name: "api-keys revoke",
    summary: "revoke an API key",
    args: ["api-key"],
    run: (ctx) => ctx.admin().call("POST", "/api-keys/revoke", { apiKey: ctx.args[0] }),
  },
  {
    name: "withdrawal-methods create",
    summary: "register a withdrawal method for a merchant",
    args: ["merchant-id"],
    options: { currency: opt("currency ticker", true), address: opt("destination address", true), label: opt("label") },
    run: (ctx) =>
      ctx
        .admin()
        .call(
          "POST",
          `/merchants/${seg(ctx.args[0]!)}/withdrawal-methods`,
          pick(ctx, { currency: "currency", address: "address", label: "label" }),
        ),
  },
  {
    name: "withdrawal-methods list",
    summary: "a merchant's withdrawal methods",
    args: ["merchant-id"],
    run: (ctx) => ctx.admin().call("GET", `/merchants/${seg(ctx.args[0]!)}/withdrawal-methods`),
  },
  {
    name: "withdrawal-methods disable",
    summary: "disable a merchant's withdrawal method: it takes no new withdrawal",
    args: ["merchant-id", "method-id"],
    run: (ctx) =>
      ctx.admin().call("POST", `/merchants/${seg(ctx.args[0]!)}/withdrawal-methods/${seg(ctx.args[1]!)}/disable`),
  },
  {
    name: "balances get",
    summary: "a merchant's balances",
    args: ["merchant-id"],
    run: (ctx) => ctx.admin().call("GET", `/merchants/${seg(ctx.args[0]!)}/balances`),
  },
  {
    name: "balances adjust",
    summary: "credit (or, with a leading -, debit) a merchant's balance, with a memo",
    args: ["merchant-id"],
    options: {
      currency: opt("currency ticker", true),
      amount: opt("amount, e.g. 100 or -5.5", true),
      memo: opt("why", true),
    },
    run: (ctx) =>
      ctx
        .admin()
        .call(
          "POST",
          `/merchants/${seg(ctx.args[0]!)}/balance-adjustments`,
          pick(ctx, { currency: "currency", amount: "amount", memo: "memo" }),
        ),
  },
  {
    name: "currencies config",
    summary: "every currency's configuration: decimals, fees, withdrawal limits (operator)",
    run: (ctx) => ctx.admin().call("GET", "/currencies"),
  },
  {
    name: "currencies set-limits",
    summary: "set a currency's withdrawal limits (operator)",
    args: ["ticker"],
    options: { min: opt("smallest withdrawal", true), max: opt("largest withdrawal", true) },
    run: (ctx) =>
      ctx
        .admin()
        .call(
          "PUT",
          `/currencies/${seg(ctx.args[0]!)}/limits`,
          pick(ctx, { min: "withdrawalMin", max: "withdrawalMax" }),
        ),
  },
  {
    name: "networks list",
    summary: "each network: node, scanner, hot wallet, and whether the forwarder factory is deployed (operator)",
    columns: ["network", "chainId", "headBlock", "lag", "factoryAddress", "factoryDeployed", "liveCrypto"],
    run: (ctx) => ctx.admin().call("GET", "/networks"),
  },
  {
    name: "networks deploy-factory",
    summary:
      "deploy the hot wallet's forwarder factory on a network (idempotent; state pending: run it again to follow the transaction)",
    args: ["network"],
    run: (ctx) => ctx.admin().call("POST", `/networks/${seg(ctx.args[0]!)}/factory`),
  },
  {
    name: "networks velocity-cap",
    summary:
      "a network's velocity cap (USD per rolling 24 hours), spent and held payouts; --usd sets it, --clear removes it (operator)",
    args: ["network"],
    options: { usd: opt("USD per rolling 24 hours"), clear: flag("remove the cap") },
    run: (ctx) => {
      const path = `/networks/${seg(ctx.args[0]!)}/velocity-cap`;
      const usd = str(ctx, "usd");
      if (usd !== undefined && ctx.options.clear) throw new UsageError("give --usd or --clear, not both");
      if (usd !== undefined) return ctx.admin().call("PUT", path, { usdPer24Hours: usd });
      if (ctx.options.clear) return ctx.admin().call("PUT", path, { usdPer24Hours: null });
      return ctx.admin().call("GET", path);
    },
  },
  {
    name: "strays list",
    summary: "stray payments (transfers a deposit address does not take), newest first, with their recovery (operator)",
    columns: ["id", "network", "currency", "token", "amount", "invoiceId"],
    options: { invoice: opt("one invoice's"), limit: opt("at most this many (1-100)") },
    run: (ctx) =>
      ctx
        .admin()
        .call(
          "GET",
          "/stray-payments",
          undefined,
          pick(ctx, { invoice: "invoiceId", limit: "limit" }) as Record<string, string>,
        ),
  },
  {
    name: "strays report",
    summary: "list a token the catalog lacks that a transaction sent to deposit addresses (operator)",
    args: ["network", "tx-hash"],
    run: (ctx) => ctx.admin().call("POST", "/stray-payments", { network: ctx.args[0], txHash: ctx.args[1] }),
  },
  {
    name: "strays recover",
    summary: "move a stray at a forwarder to the hot wallet with the next flush (idempotent, audited; operator)",
    args: ["id"],
    run: (ctx) => ctx.admin().call("POST", `/stray-payments/${seg(ctx.args[0]!)}/recover`),
  },
  {
    name: "strays return",
    summary: "mark a recovered stray returned to its sender, sent by hand from the hot wallet (operator)",
    args: ["id"],
    options: { note: opt("how it was returned (the transaction)", true) },
    run: (ctx) => ctx.admin().call("POST", `/stray-payments/${seg(ctx.args[0]!)}/return`, { note: str(ctx, "note") }),
  },
  {
    name: "payouts list",
    summary: "payouts, oldest first; --state needs_reconciliation lists those to resolve",
    options: { state: opt("a payout state"), limit: opt("at most this many (1-500)") },
    run: (ctx) =>
      ctx
        .admin()
        .call("GET", "/payouts", undefined, pick(ctx, { state: "state", limit: "limit" }) as Record<string, string>),
  },
  {
    name: "payouts reconcile",
    summary: "record the outcome of a payout established with the processor",
    args: ["request-id"],
    options: { status: opt("completed or failed", true), "tx-id": opt("the processor's transaction id") },
    run: (ctx) =>
      ctx
        .admin()
        .call("POST", `/payouts/${seg(ctx.args[0]!)}/outcome`, pick(ctx, { status: "status", "tx-id": "txId" })),
  },
  {
    name: "callbacks list",
    summary: "an invoice's callback events and their delivery attempts",
    args: ["invoice-id"],
    run: (ctx) => ctx.admin().call("GET", `/invoices/${seg(ctx.args[0]!)}/callbacks`),
  },
  {
    name: "callbacks redeliver",
    summary: "deliver a callback event again, now",
    args: ["event-id"],
    run: (ctx) => ctx.admin().call("POST", `/callbacks/${seg(ctx.args[0]!)}/redeliver`),
  },
  // Merchant API, through the SDK.
  { name: "version", summary: "the API version", run: (ctx) => ctx.merchant().getVersion() },
  {
    name: "currencies list",
    summary: "the supported currencies",
    columns: ["ticker", "fullName", "network", "type"],
    run: (ctx) => ctx.merchant().listCurrencies(),
  },
  { name: "countries list", summary: "the countries", run: (ctx) => ctx.merchant().listCountries() },
  { name: "me", summary: "the merchant of the API key", run: (ctx) => ctx.merchant().me() },
  {
    name: "invoices create",
    summary: "create an invoice",
    options: {
      currency: opt("currency ticker", true),
      amount: opt("amount, e.g. 100.5", true),
      "order-no": opt("your order number"),
      description: opt("description"),
      type: opt("b2c (default) or b2b"),
      "callback-url": opt("where status changes are POSTed"),
      "success-url": opt("payer's page: after success"),
      "return-url": opt("payer's page: back to the shop"),
      "fail-url": opt("payer's page: after failure"),
      "expires-at": opt("RFC 3339 expiry"),
      "idempotency-key": opt("creates at most one invoice per key (default: a new UUID)"),
    },
    run: (ctx) =>
      ctx.merchant().createInvoice({
        currency: str(ctx, "currency")!,
        amount: str(ctx, "amount")!,
        ...(pick(ctx, {
          "order-no": "order_no",
          description: "description",
          type: "type",
          "callback-url": "callbackUrl",
          "success-url": "success_url",
          "return-url": "return_url",
          "fail-url": "fail_url",
          "expires-at": "expiresAt",
          "idempotency-key": "idempotencyKey",
        }) as object),
      }),
  },
  {
    name: "invoices get",
    summary: "show an invoice",
    args: ["invoice-id"],
    run: (ctx) => ctx.merchant().getInvoice(ctx.args[0]!),
  },
  {
    name: "invoices by-order",
    summary: "the invoices with your order number",
    args: ["order-no"],
    columns: invoiceColumns,
    run: (ctx) => ctx.merchant().getInvoicesByOrderId(ctx.args[0]!),
  },
  {
    name: "invoices estimate-fees",
    summary: "what an invoice would cost",
    options: { currency: opt("currency ticker", true), amount: opt("amount", true), type: opt("b2c or b2b") },
    run: (ctx) =>
      ctx.merchant().estimateFees({
        currency: str(ctx, "currency")!,
        amount: str(ctx, "amount")!,
        ...(pick(ctx, { type: "type" }) as object),
      }),
  },
  {
    name: "withdrawals create",
    summary: "withdraw to a registered withdrawal method (signed; retried safely)",
    options: {
      currency: opt("currency ticker", true),
      amount: opt("amount", true),
      method: opt("withdrawal method id", true),
      ...signedOption,
    },
    run: (ctx) =>
      ctx.merchant().createWithdrawal(
        {
          currency: str(ctx, "currency")!,
          amount: str(ctx, "amount")!,
          withdrawalMethodId: integer(str(ctx, "method"), "method"),
        },
        requestIdOption(ctx),
      ),
  },
  {
    name: "refunds crypto",
    summary: "refund a completed invoice in crypto (signed)",
    args: ["invoice-id"],
    options: {
      address: opt("destination address"),
      "same-address": flag("refund to the address the payment came from"),
      reason: opt("reason"),
      ...signedOption,
    },
    run: (ctx) => {
      if ((str(ctx, "address") === undefined) === !ctx.options["same-address"]) {
        throw new UsageError("give either --address or --same-address");
      }
      return ctx.merchant().refundCrypto(
        {
          invoiceId: ctx.args[0]!,
          ...(ctx.options["same-address"] ? { withdrawToSameAddress: true } : { address: str(ctx, "address")! }),
          ...(pick(ctx, { reason: "reason" }) as object),
        },
        requestIdOption(ctx),
      );
    },
  },
  {
    name: "refunds fiat",
    summary: "refund a completed fiat-settled invoice (signed)",
    args: ["invoice-id"],
    options: { reason: opt("reason"), ...signedOption },
    run: (ctx) =>
      ctx
        .merchant()
        .refundFiat({ invoiceId: ctx.args[0]!, ...(pick(ctx, { reason: "reason" }) as object) }, requestIdOption(ctx)),
  },
  // Refunds beyond the interface and payment links (product §25).
  {
    name: "refunds create",
    summary: "refund part of an invoice, several times, to an address, the sender or a claim link (signed)",
    args: ["invoice-id"],
    options: {
      amount: opt("amount (invoice currency; settlement currency with --fiat)", true),
      address: opt("destination address"),
      "same-address": flag("refund to the address the payment came from"),
      claim: flag("answer a claim link where the payer enters an address (30 days)"),
      fiat: flag("a fiat refund (no destination: back through the payment)"),
      "fee-paid-by": opt("who bears the network fee: payer (default) or merchant"),
      reason: opt("reason"),
      ...signedOption,
    },
    run: (ctx) => {
      const feePaidBy = str(ctx, "fee-paid-by");
      if (feePaidBy !== undefined && feePaidBy !== "payer" && feePaidBy !== "merchant") {
        throw new UsageError("--fee-paid-by is payer or merchant");
      }
      return ctx.merchant().createRefund(
        {
          invoiceId: ctx.args[0]!,
          type: ctx.options.fiat ? "fiat" : "crypto",
          amount: str(ctx, "amount")!,
          ...(str(ctx, "address") !== undefined ? { address: str(ctx, "address")! } : {}),
          ...(ctx.options["same-address"] ? { withdrawToSameAddress: true } : {}),
          ...(ctx.options.claim ? { claim: true } : {}),
          ...(feePaidBy !== undefined ? { networkFeePaidBy: feePaidBy } : {}),
          ...(pick(ctx, { reason: "reason" }) as object),
        },
        requestIdOption(ctx),
      );
    },
  },
  {
    name: "payment-links create",
    summary: "a payment link: --amount, or --min-amount and --max-amount (the payer chooses)",
    options: {
      currency: opt("currency", true),
      amount: opt("fixed amount"),
      "min-amount": opt("lowest amount the payer may choose"),
      "max-amount": opt("highest amount the payer may choose"),
      description: opt("description"),
      "callback-url": opt("callback URL of its invoices"),
      "success-url": opt("where the payer goes after paying"),
      "return-url": opt("where the payer returns to"),
      "fail-url": opt("where the payer goes when payment fails"),
    },
    run: (ctx) =>
      ctx.merchant().createPaymentLink({
        currency: str(ctx, "currency")!,
        ...(pick(ctx, {
          amount: "amount",
          "min-amount": "minAmount",
          "max-amount": "maxAmount",
          description: "description",
          "callback-url": "callbackUrl",
          "success-url": "successUrl",
          "return-url": "returnUrl",
          "fail-url": "failUrl",
        }) as object),
      }),
  },
  {
    name: "payment-links list",
    summary: "payment links, newest first",
    options: { limit: opt("how many at most (default 20)") },
    columns: ["id", "currency", "amount", "min_amount", "max_amount", "active", "url"],
    run: (ctx) => collect(ctx.merchant().listPaymentLinks(), ctx),
  },
  {
    name: "payment-links get",
    summary: "a payment link",
    args: ["link-id"],
    run: (ctx) => ctx.merchant().getPaymentLink(ctx.args[0]!),
  },
  {
    name: "payment-links deactivate",
    summary: "deactivate a payment link (its URL then answers 410)",
    args: ["link-id"],
    run: (ctx) => ctx.merchant().updatePaymentLink(ctx.args[0]!, { active: false }),
  },
  {
    name: "payment-links invoices",
    summary: "the invoices a payment link made, newest first",
    args: ["link-id"],
    columns: ["id", "status", "amount", "currency", "created_at"],
    run: async (ctx) => (await ctx.merchant().listPaymentLinkInvoices(ctx.args[0]!)).data,
  },
  // Plans and subscriptions (product §29).
  {
    name: "plans create",
    summary: "a plan: a price per period (--interval day, week, month or year), with a trial and a grace",
    options: {
      name: opt("the plan's name", true),
      currency: opt("currency ticker", true),
      amount: opt("price of a period, e.g. 25", true),
      interval: opt("day, week, month or year", true),
      "interval-count": opt("intervals per period (default 1): --interval week --interval-count 2 is fortnightly"),
      "trial-days": opt("days of free trial before the first period (default 0)"),
      "grace-days": opt("days an unpaid period's invoice stays open (default 3)"),
      "renewal-notice-days": opt("days before a period ends that the next one's invoice is made (default 3)"),
    },
    run: (ctx) => ctx.merchant().createPlan(planParams(ctx)),
  },
  {
    name: "plans list",
    summary: "plans, newest first",
    options: { limit: opt("how many at most (default 20)") },
    columns: ["id", "name", "currency", "amount", "interval", "intervalCount", "trialDays", "graceDays", "active"],
    run: (ctx) => collect(ctx.merchant().listPlans(), ctx),
  },
  {
    name: "plans get",
    summary: "a plan",
    args: ["plan-id"],
    run: (ctx) => ctx.merchant().getPlan(ctx.args[0]!),
  },
  {
    name: "plans retire",
    summary: "retire a plan: it takes no new subscriptions; its subscriptions continue",
    args: ["plan-id"],
    run: (ctx) => ctx.merchant().updatePlan(ctx.args[0]!, { active: false }),
  },
  {
    name: "subscriptions create",
    summary: "subscribe a customer to a plan (signed; retried safely): trialing, or incomplete with its first invoice",
    options: {
      plan: opt("plan id", true),
      customer: opt("your reference of the customer", true),
      email: opt("the customer's e-mail address"),
      "callback-url": opt("where the subscription's events are POSTed"),
      ...signedOption,
    },
    run: (ctx) =>
      ctx.merchant().createSubscription(
        {
          planId: str(ctx, "plan")!,
          customer: { reference: str(ctx, "customer")!, ...(pick(ctx, { email: "email" }) as object) },
          ...(pick(ctx, { "callback-url": "callbackUrl" }) as object),
        },
        requestIdOption(ctx),
      ),
  },
  {
    name: "subscriptions list",
    summary: "subscriptions, newest first; by --status, --plan or --customer",
    options: {
      ...listOptions(),
      plan: opt("only this plan's"),
      customer: opt("only this customer's (your reference)"),
    },
    columns: ["id", "status", "planId", "customer", "currentPeriodEnd", "cancelAtPeriodEnd"],
    run: (ctx) =>
      collect(
        ctx.merchant().listSubscriptions({
          ...listParams(ctx),
          ...(pick(ctx, { plan: "planId", customer: "customer" }) as Record<string, string>),
        } as never),
        ctx,
      ),
  },
  {
    name: "subscriptions get",
    summary: "a subscription, with its open invoice",
    args: ["subscription-id"],
    run: (ctx) => ctx.merchant().getSubscription(ctx.args[0]!),
  },
  {
    name: "subscriptions cancel",
    summary: "cancel a subscription now (its open invoice closed), or with --at-period-end when its period ends",
    args: ["subscription-id"],
    options: { "at-period-end": flag("cancel at the end of the current period instead of now") },
    run: (ctx) =>
      ctx.merchant().cancelSubscription(ctx.args[0]!, { atPeriodEnd: ctx.options["at-period-end"] === true }),
  },
  {
    name: "subscriptions change-plan",
    summary: "change a subscription's plan from its next period on",
    args: ["subscription-id"],
    options: { plan: opt("the new plan's id", true) },
    run: (ctx) => ctx.merchant().changeSubscriptionPlan(ctx.args[0]!, { planId: str(ctx, "plan")! }),
  },
  {
    name: "subscriptions advance",
    summary: "sandbox test clock: run a subscription's schedule up to --to (invoices, statuses, events)",
    args: ["subscription-id"],
    options: { to: opt("the subscription's new time, RFC 3339 (e.g. 2030-01-31T00:00:00Z)", true) },
    run: (ctx) => ctx.merchant().advanceSubscription(ctx.args[0]!, { to: str(ctx, "to")! }),
  },
  // Customers' deposit addresses and their deposits (product §30).
  {
    name: "deposit-addresses create",
    summary: "a customer's deposit address in a currency: the same one for the same customer, however often asked",
    options: {
      customer: opt("your reference of the customer", true),
      currency: opt("currency ticker", true),
      "callback-url": opt("where the address's deposit events are POSTed (else your default)"),
    },
    run: (ctx) =>
      ctx.merchant().createDepositAddress({
        customer: str(ctx, "customer")!,
        currency: str(ctx, "currency")!,
        ...(pick(ctx, { "callback-url": "callbackUrl" }) as object),
      }),
  },
  {
    name: "deposit-addresses list",
    summary: "deposit addresses, newest first; one customer's with --customer",
    options: { ...listOptionsWithout("status"), customer: opt("only this customer's (your reference)") },
    columns: depositAddressColumns,
    run: (ctx) => {
      const { status: _status, ...params } = listParams(ctx) as Record<string, unknown>;
      const customer = pick(ctx, { customer: "customer" }) as { customer?: string };
      return collect(ctx.merchant().listDepositAddresses({ ...params, ...customer } as never), ctx);
    },
  },
  {
    name: "deposit-addresses get",
    summary: "a deposit address, with the networks it takes deposits on now",
    args: ["address-id"],
    run: (ctx) => ctx.merchant().getDepositAddress(ctx.args[0]!),
  },
  {
    name: "deposit-addresses deactivate",
    summary: "deactivate an address: transfers to it are then held for your decision",
    args: ["address-id"],
    run: (ctx) => ctx.merchant().updateDepositAddress(ctx.args[0]!, { active: false }),
  },
  {
    name: "deposit-addresses activate",
    summary: "activate an address again: its later transfers are credited",
    args: ["address-id"],
    run: (ctx) => ctx.merchant().updateDepositAddress(ctx.args[0]!, { active: true }),
  },
  {
    name: "deposits list",
    summary: "transfers to your customers' addresses, newest first; by --address, --status or --network",
    options: {
      ...listOptions(),
      address: opt("only this deposit address's (its id)"),
      network: opt("only this network's"),
    },
    columns: ["id", "status", "amount", "entry", "network", "customer", "creditedAmount", "txHash", "createdAt"],
    run: (ctx) =>
      collect(
        ctx.merchant().listDeposits({
          ...listParams(ctx),
          ...(pick(ctx, { address: "deposit_address_id", network: "network" }) as Record<string, string>),
        } as never),
        ctx,
      ),
  },
  {
    name: "deposits get",
    summary: "a deposit: its amount, fees, status and transaction",
    args: ["deposit-id"],
    run: (ctx) => ctx.merchant().getDeposit(ctx.args[0]!),
  },
  // API extensions (product §15).
  {
    name: "withdrawals get",
    summary: "a withdrawal in its current state",
    args: ["request-id"],
    run: (ctx) => ctx.merchant().getWithdrawal(ctx.args[0]!),
  },
  {
    name: "refunds get",
    summary: "a refund in its current state",
    args: ["request-id"],
    run: (ctx) => ctx.merchant().getRefund(ctx.args[0]!),
  },
  {
    name: "invoices list",
    summary: "invoices, newest first",
    options: listOptions(),
    columns: invoiceColumns,
    run: (ctx) => collect(ctx.merchant().listInvoices(listParams(ctx) as never), ctx),
  },
  {
    name: "withdrawals list",
    summary: "withdrawals, newest first",
    options: listOptions(),
    columns: requestColumns,
    run: (ctx) => collect(ctx.merchant().listWithdrawals(listParams(ctx) as never), ctx),
  },
  {
    name: "refunds list",
    summary: "refunds, newest first",
    options: listOptions(),
    columns: [...requestColumns, "invoice_id"],
    run: (ctx) => collect(ctx.merchant().listRefunds(listParams(ctx) as never), ctx),
  },
  {
    name: "events list",
    summary: "the merchant's events, newest first",
    options: eventListOptions(),
    columns: ["id", "type", "created_at"],
    run: (ctx) => collect(ctx.merchant().listEvents(eventListParams(ctx) as never), ctx),
  },
  {
    name: "listen",
    summary: "follow the merchant's events and forward each, signed, to a local URL",
    options: {
      "forward-to": opt("where to POST each event, e.g. http://localhost:4000/callbacks", true),
      "callback-secret": opt("the secret to sign with (default PAYMENTS_CALLBACK_SECRET)"),
      "interval-ms": opt("how often to look for new events (default 2000)"),
    },
    run: (ctx) => listen(ctx),
  },
  {
    name: "mcp",
    summary:
      "a Model Context Protocol server on stdio for an AI assistant: reads, invoice and payment-link creation and subscription cancellation with this API key",
    printsNothing: true,
    run: (ctx) => serveMcp(ctx.merchant(), ctx),
  },
];

const INTERVALS = ["day", "week", "month", "year"] as const;

/** The body of `plans create`: the interval checked, the day counts whole numbers. */
function planParams(ctx: Context): CreatePlanParams {
  const interval = str(ctx, "interval")!;
  const known = INTERVALS.find((i) => i === interval);
  if (known === undefined) throw new UsageError("--interval is day, week, month or year");
  const counts: [string, "intervalCount" | "trialDays" | "graceDays" | "renewalNoticeDays"][] = [
    ["interval-count", "intervalCount"],
    ["trial-days", "trialDays"],
    ["grace-days", "graceDays"],
    ["renewal-notice-days", "renewalNoticeDays"],
  ];
  const params: CreatePlanParams = {
    name: str(ctx, "name")!,
    currency: str(ctx, "currency")!,
    amount: str(ctx, "amount")!,
    interval: known,
  };
  for (const [option, field] of counts) {
    if (str(ctx, option) !== undefined) params[field] = integer(str(ctx, option), option);
  }
  return params;
}

function requestIdOption(ctx: Context): { requestId?: string } {
  const requestId = str(ctx, "request-id");
  return requestId === undefined ? {} : { requestId };
}

function listOptions(): Record<string, OptionSpec> {
  return {
    limit: opt("at most this many in all (default 20)"),
    status: opt("only this status"),
    "created-gte": opt("created at or after (RFC 3339)"),
    "created-lt": opt("created before (RFC 3339)"),
    "starting-after": opt("the id after which to start"),
  };
}

function listOptionsWithout(name: string): Record<string, OptionSpec> {
  const { [name]: _left, ...rest } = listOptions();
  return rest;
}

function eventListOptions(): Record<string, OptionSpec> {
  return { ...listOptionsWithout("status"), type: opt("only this type, e.g. invoice.completed or withdrawal.failed") };
}

function eventListParams(ctx: Context) {
  const { status: _status, ...rest } = listParams(ctx) as Record<string, unknown>;
  return { ...rest, ...(pick(ctx, { type: "type" }) as Record<string, string>) };
}

function listParams(ctx: Context) {
  const limit = str(ctx, "limit") === undefined ? 20 : integer(str(ctx, "limit"), "limit");
  return {
    limit: Math.min(limit, 100),
    ...(pick(ctx, {
      status: "status",
      "created-gte": "created_gte",
      "created-lt": "created_lt",
      "starting-after": "starting_after",
    }) as Record<string, string>),
  };
}

/** Reads an async-iterable list up to --limit items. */
async function collect<T>(items: AsyncIterable<T>, ctx: Context): Promise<T[]> {
  const limit = str(ctx, "limit") === undefined ? 20 : integer(str(ctx, "limit"), "limit");
  const out: T[] = [];
  if (limit === 0) return out;
  for await (const item of items) {
    out.push(item);
    if (out.length >= limit) break;
  }
  return out;
}

/** The Standard Webhooks headers of an event, signed with a `whsec_` secret, as the service signs callbacks. */
export function signEvent(body: string, eventId: string, secret: string, now = Date.now()) {
  const timestamp = String(Math.floor(now / 1000));
  const key = Buffer.from(secret.startsWith("whsec_") ? secret.slice(6) : secret, "base64");
  const signature = createHmac("sha256", key).update(`${eventId}.${timestamp}.${body}`, "utf8").digest("base64");
  return { "webhook-id": eventId, "webhook-timestamp": timestamp, "webhook-signature": `v1,${signature}` };
}

/**
 * Events can commit a little after their `created_at` (the time of the change, taken inside its
 * transaction), so each poll looks this far back before the newest event seen, and skips ids it
 * has already forwarded.
 */
export const LISTEN_LOOKBACK_MS = 60_000;
/** At most this many events per poll (ten pages); the rest wait for the next poll. */
const LISTEN_MAX_PER_POLL = 1000;

/** What `listen` has seen: ids by created_at, kept for the look-back window only. */
export class EventWatermark {
  #seen = new Map<string, string>();
  #newest: string | null = null;

  /** The created_gte of the next poll: the look-back window before the newest event seen, or everything. */
  since(): string | undefined {
    if (this.#newest === null) return undefined;
    return new Date(Date.parse(this.#newest) - LISTEN_LOOKBACK_MS).toISOString();
  }

  /** Records an event; answers whether it is new. */
  add(event: { id: string; created_at: string }): boolean {
    if (this.#seen.has(event.id)) return false;
    this.#seen.set(event.id, event.created_at);
    if (this.#newest === null || event.created_at > this.#newest) this.#newest = event.created_at;
    return true;
  }

  /** Forgets ids older than the window: they can no longer be listed by a poll. */
  prune(): void {
    const since = this.since();
    if (since === undefined) return;
    for (const [id, createdAt] of this.#seen) if (createdAt < since) this.#seen.delete(id);
  }
}

/** The events of the look-back window and after, oldest first, bounded per poll. */
async function pollEvents(client: PaymentsClient, since: string | undefined): Promise<PaymentsEvent[]> {
  const found: PaymentsEvent[] = [];
  for await (const event of client.listEvents({ limit: 100, ...(since === undefined ? {} : { created_gte: since }) })) {
    found.push(event);
    if (found.length >= LISTEN_MAX_PER_POLL) break;
  }
  return found.reverse();
}

async function listen(ctx: Context): Promise<unknown> {
  const forwardTo = str(ctx, "forward-to")!;
  let target: URL;
  try {
    target = new URL(forwardTo);
  } catch {
    throw new UsageError("--forward-to must be a URL");
  }
  const secret = str(ctx, "callback-secret") ?? process.env.PAYMENTS_CALLBACK_SECRET;
  if (!secret)
    throw new UsageError("--callback-secret or PAYMENTS_CALLBACK_SECRET is required to sign forwarded events");
  const intervalMs = str(ctx, "interval-ms") === undefined ? 2000 : integer(str(ctx, "interval-ms"), "interval-ms");
  const client = ctx.merchant();
  // What exists now is history: only events that appear from here on are forwarded.
  const watermark = new EventWatermark();
  const newest = (await client.listEventsPage({ limit: 1 })).data[0];
  if (newest !== undefined) {
    watermark.add(newest);
    for (const event of await pollEvents(client, watermark.since())) watermark.add(event);
  }
  ctx.log(
    `Ready. Following the events of this API key's merchant at ${ctx.baseUrl} every ${intervalMs} ms; ` +
      `each new one is POSTed, signed with the callback secret, to ${target.href} (Ctrl-C to stop).`,
  );
  let forwarded = 0;
  while (!ctx.signal.aborted) {
    for (const event of await pollEvents(client, watermark.since())) {
      if (!watermark.add(event)) continue;
      const body = JSON.stringify(event);
      let result: string;
      try {
        const response = await fetch(target, {
          method: "POST",
          headers: { "content-type": "application/json", ...signEvent(body, event.id, secret) },
          body,
          signal: AbortSignal.timeout(10_000),
        });
        result = String(response.status);
      } catch (error) {
        result = `failed (${(error as Error).message})`;
      }
      forwarded++;
      ctx.log(`${event.created_at}  ${event.type}  ${event.id}  -> ${result}`);
    }
    watermark.prune();
    await pause(intervalMs, ctx.signal);
  }
  return { forwarded };
}

/**
 * Waits `ms`, or less when `signal` aborts. Its abort listener goes when the wait ends: one left
 * behind per poll would pile up on the signal (Node warns of a listener leak after ten).
 */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const stop = () => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", stop);
      resolve();
    }, ms);
    signal.addEventListener("abort", stop, { once: true });
  });
}
