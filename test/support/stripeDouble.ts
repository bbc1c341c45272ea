// Test-only local HTTP double of Stripe's API: the endpoints the adapter uses (checkout sessions, refunds, a payment's or refund's balance transaction), request shapes checked against the SDK's types, idempotency keys honoured, and webhooks signed with the SDK's own helper.
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import Stripe from "stripe";

export const DOUBLE_SECRET_KEY = "sk_test_double0123456789";
export const DOUBLE_WEBHOOK_SECRET = "whsec_double0123456789abcdef";

/** The keys the adapter may send; `satisfies` holds each list to the SDK's parameter types, so a misspelt or removed field fails to compile. */
const SESSION_KEYS = [
  "mode",
  "allowed_payment_method_types",
  "line_items",
  "success_url",
  "cancel_url",
  "client_reference_id",
  "metadata",
  "payment_intent_data",
  "expires_at",
] as const satisfies readonly (keyof Stripe.Checkout.SessionCreateParams)[];
const LINE_ITEM_KEYS = [
  "quantity",
  "price_data",
] as const satisfies readonly (keyof Stripe.Checkout.SessionCreateParams.LineItem)[];
const PRICE_DATA_KEYS = [
  "currency",
  "unit_amount",
  "product_data",
] as const satisfies readonly (keyof Stripe.Checkout.SessionCreateParams.LineItem.PriceData)[];
const PRODUCT_DATA_KEYS = [
  "name",
] as const satisfies readonly (keyof Stripe.Checkout.SessionCreateParams.LineItem.PriceData.ProductData)[];
const INTENT_DATA_KEYS = [
  "metadata",
] as const satisfies readonly (keyof Stripe.Checkout.SessionCreateParams.PaymentIntentData)[];
const REFUND_KEYS = [
  "payment_intent",
  "amount",
  "metadata",
] as const satisfies readonly (keyof Stripe.RefundCreateParams)[];

/** The objects a retrieval may expand, per path; the list is held to the SDK's retrieve parameters. */
const RETRIEVE_KEYS = ["expand"] as const satisfies readonly (keyof Stripe.PaymentIntentRetrieveParams &
  keyof Stripe.RefundRetrieveParams &
  keyof Stripe.BalanceTransactionRetrieveParams)[];
const INTENT_EXPANDS = ["latest_charge", "latest_charge.balance_transaction"];
const REFUND_EXPANDS = ["balance_transaction"];

type Form = { [key: string]: string | Form };

/** Stripe's form encoding (`a[b][0][c]=v`) into nested objects; arrays stay objects keyed by index. */
export function parseForm(text: string): Form {
  const root: Form = {};
  for (const [key, value] of new URLSearchParams(text)) {
    const path = key.replace(/\]/g, "").split("[");
    let node = root;
    path.forEach((part, i) => {
      if (i === path.length - 1) node[part] = value;
      else {
        const next = node[part];
        node[part] = typeof next === "object" ? next : {};
        node = node[part] as Form;
      }
    });
  }
  return root;
}

class ShapeError extends Error {}

function only(node: unknown, keys: readonly string[], where: string): Form {
  if (typeof node !== "object" || node === null) throw new ShapeError(`${where} must be an object`);
  for (const key of Object.keys(node)) {
    if (!keys.includes(key)) throw new ShapeError(`${where}.${key} is not a parameter the adapter should send`);
  }
  return node as Form;
}

function text(node: Form, key: string, where: string): string {
  const value = node[key];
  if (typeof value !== "string" || value === "") throw new ShapeError(`${where}.${key} is required text`);
  return value;
}

function integer(node: Form, key: string, where: string): number {
  const value = text(node, key, where);
  if (!/^[1-9]\d*$/.test(value)) throw new ShapeError(`${where}.${key} must be a positive integer`);
  return Number(value);
}

/** The session request as Stripe would read it; anything outside the SDK's shape is refused. */
function checkSession(form: Form) {
  only(form, SESSION_KEYS, "session");
  if (text(form, "mode", "session") !== "payment") throw new ShapeError("session.mode must be payment");
  const items = only(form.line_items, ["0"], "line_items");
  const item = only(items["0"], LINE_ITEM_KEYS, "line_items[0]");
  if (integer(item, "quantity", "line_items[0]") !== 1) throw new ShapeError("quantity must be 1");
  const price = only(item.price_data, PRICE_DATA_KEYS, "price_data");
  only(price.product_data, PRODUCT_DATA_KEYS, "product_data");
  only(form.payment_intent_data, INTENT_DATA_KEYS, "payment_intent_data");
  const metadata = only(form.metadata, ["invoice_id"], "metadata");
  return {
    currency: text(price, "currency", "price_data"),
    unitAmount: integer(price, "unit_amount", "price_data"),
    successUrl: text(form, "success_url", "session"),
    cancelUrl: text(form, "cancel_url", "session"),
    invoiceId: text(metadata, "invoice_id", "metadata"),
    expiresAt: integer(form, "expires_at", "session"),
  };
}

function checkRefund(form: Form) {
  only(form, REFUND_KEYS, "refund");
  const metadata = only(form.metadata, ["refund_request_id"], "metadata");
  return {
    paymentIntent: text(form, "payment_intent", "refund"),
    amount: integer(form, "amount", "refund"),
    refundRequestId: text(metadata, "refund_request_id", "metadata"),
  };
}

export interface DoubleSession {
  id: string;
  url: string;
  paymentIntent: string;
  currency: string;
  amount: number;
  invoiceId: string;
  successUrl: string;
  cancelUrl: string;
}

export interface DoubleRefund {
  id: string;
  paymentIntent: string;
  amount: number;
  refundRequestId: string;
  /** Stripe books a refund at once: its balance transaction's id. */
  balanceTransaction: string;
}

/** A paid checkout's charge and what Stripe's balance says of it. */
export interface DoublePayment {
  paymentIntent: string;
  chargeId: string;
  amount: number;
  currency: string;
  invoiceId: string;
  /** Null until Stripe has booked the charge (see `holdBalanceTransactions`). */
  balanceTransaction: Stripe.BalanceTransaction | null;
}

/**
 * The double's pricing, in the settlement currency's minor units: 1.5 % + 25 (Stripe's standard
 * European card price). Tests read the fee from the balance transaction, never from this rule.
 */
export function doubleFee(settledAmount: number): number {
  return Math.round(Math.abs(settledAmount) * 0.015) + 25;
}

export interface StripeDouble {
  baseUrl: string;
  /** Every API request, in order, with its idempotency key. */
  requests: { method: string; path: string; idempotencyKey: string | null }[];
  sessions: DoubleSession[];
  refunds: DoubleRefund[];
  /** Every paid checkout's charge, by PaymentIntent id. */
  payments: Map<string, DoublePayment>;
  /** Every balance transaction, by id (`txn_…`). */
  balanceTransactions: Map<string, Stripe.BalanceTransaction>;
  /** The next refund calls, or retrievals of a payment or refund, fail this way (a network cut, or Stripe's 500). */
  failNext: { refunds: number; retrievals: number; status: number };
  /**
   * How the account settles: in the payment's own currency (null), or converted into another at a
   * rate, as an account whose default currency differs does. The fee is then in that currency.
   */
  settlement: { currency: string; rate: number } | null;
  /** While true, a new charge has no balance transaction yet (Stripe books some charges later). */
  holdBalanceTransactions: boolean;
  /** Books a held charge: its balance transaction appears. */
  bookCharge(paymentIntent: string): Stripe.BalanceTransaction;
  /** What a refund's balance transaction gives back of the fee (Stripe keeps it: 0 by default). */
  refundFeeReturned: number;
  /** An event as Stripe sends it: its JSON body and the stripe-signature header (the SDK's test helper). */
  event(
    type: string,
    object: Record<string, unknown>,
    options?: { id?: string; secret?: string },
  ): { body: string; signature: string };
  /** A checkout's session object when the payer paid it; the first call makes the payment's charge. */
  paidSession(session: DoubleSession): Record<string, unknown>;
  close(): Promise<void>;
}

const sdk = new Stripe(DOUBLE_SECRET_KEY);

function readBody(request: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on("data", (c: Buffer) => chunks.push(c));
    request.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    request.on("error", reject);
  });
}

function send(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, {
    "content-type": "application/json",
    "request-id": `req_${randomBytes(6).toString("hex")}`,
  });
  response.end(JSON.stringify(body));
}

function stripeError(response: ServerResponse, status: number, type: string, message: string): void {
  send(response, status, { error: { type, message } });
}

export async function startStripeDouble(): Promise<StripeDouble> {
  const requests: StripeDouble["requests"] = [];
  const sessions: DoubleSession[] = [];
  const refunds: DoubleRefund[] = [];
  const payments = new Map<string, DoublePayment>();
  const balanceTransactions = new Map<string, Stripe.BalanceTransaction>();
  const failNext = { refunds: 0, retrievals: 0, status: 500 };
  const state = { settlement: null as StripeDouble["settlement"], hold: false, refundFeeReturned: 0 };
  // Stripe's idempotency: a key replays its first answer for the same body and refuses another body.
  const replies = new Map<string, { body: string; status: number; answer: unknown }>();
  let baseUrl = "";

  function sessionObject(s: DoubleSession, paid: boolean): Record<string, unknown> {
    return {
      id: s.id,
      object: "checkout.session",
      url: paid ? null : s.url,
      mode: "payment",
      status: paid ? "complete" : "open",
      payment_status: paid ? "paid" : "unpaid",
      payment_intent: paid ? s.paymentIntent : null,
      amount_total: s.amount,
      currency: s.currency,
      client_reference_id: s.invoiceId,
      metadata: { invoice_id: s.invoiceId },
      success_url: s.successUrl,
      cancel_url: s.cancelUrl,
    };
  }

  function createSession(form: Form): [number, unknown] {
    const checked = checkSession(form);
    const id = `cs_test_${randomBytes(12).toString("hex")}`;
    const session: DoubleSession = {
      id,
      url: `${baseUrl}/c/pay/${id}`,
      paymentIntent: `pi_${randomBytes(12).toString("hex")}`,
      currency: checked.currency,
      amount: checked.unitAmount,
      invoiceId: checked.invoiceId,
      successUrl: checked.successUrl,
      cancelUrl: checked.cancelUrl,
    };
    sessions.push(session);
    return [200, sessionObject(session, false)];
  }

  /** A balance transaction as Stripe books it, in the account's settlement currency: net is amount less fee. */
  function book(fields: {
    type: "charge" | "refund";
    amount: number;
    currency: string;
    /** A refund's fee (negative: given back); a charge's is the double's price. */
    fee?: number;
    source: string;
  }): Stripe.BalanceTransaction {
    const rate = state.settlement?.rate ?? null;
    const currency = state.settlement?.currency ?? fields.currency;
    const amount = rate === null ? fields.amount : Math.round(fields.amount * rate);
    const fee = fields.type === "charge" ? doubleFee(amount) : (fields.fee ?? 0);
    const created = Math.floor(Date.now() / 1000);
    const bt = {
      id: `txn_${randomBytes(12).toString("hex")}`,
      object: "balance_transaction",
      amount,
      available_on: created + 2 * 86_400,
      balance_type: "payments",
      created,
      currency,
      description: null,
      exchange_rate: rate,
      fee,
      fee_details:
        fee === 0
          ? []
          : [{ amount: fee, application: null, currency, description: "Stripe processing fees", type: "stripe_fee" }],
      net: amount - fee,
      reporting_category: fields.type,
      source: fields.source,
      status: "pending",
      type: fields.type,
    } satisfies Stripe.BalanceTransaction;
    balanceTransactions.set(bt.id, bt);
    return bt;
  }

  function bookCharge(paymentIntent: string): Stripe.BalanceTransaction {
    const payment = payments.get(paymentIntent);
    if (!payment) throw new Error(`no payment ${paymentIntent} at the double`);
    payment.balanceTransaction ??= book({
      type: "charge",
      amount: payment.amount,
      currency: payment.currency,
      source: payment.chargeId,
    });
    return payment.balanceTransaction;
  }

  /** The payer paid the session: its charge, booked at once unless held. */
  function pay(s: DoubleSession): void {
    if (payments.has(s.paymentIntent)) return;
    payments.set(s.paymentIntent, {
      paymentIntent: s.paymentIntent,
      chargeId: `ch_${s.paymentIntent.slice(3)}`,
      amount: s.amount,
      currency: s.currency,
      invoiceId: s.invoiceId,
      balanceTransaction: null,
    });
    if (!state.hold) bookCharge(s.paymentIntent);
  }

  function createRefund(form: Form): [number, unknown] {
    const checked = checkRefund(form);
    const id = `re_${randomBytes(12).toString("hex")}`;
    const payment = payments.get(checked.paymentIntent);
    // Stripe keeps the payment's fee: the refund's balance transaction has none, unless a test gives some back.
    const bt = book({
      type: "refund",
      amount: -checked.amount,
      currency: payment?.currency ?? "eur",
      fee: state.refundFeeReturned === 0 ? 0 : -state.refundFeeReturned,
      source: id,
    });
    const refund: DoubleRefund = { id, ...checked, balanceTransaction: bt.id };
    refunds.push(refund);
    return [200, refundObject(refund, false)];
  }

  function refundObject(refund: DoubleRefund, expandBalanceTransaction: boolean): Record<string, unknown> {
    return {
      id: refund.id,
      object: "refund",
      amount: refund.amount,
      payment_intent: refund.paymentIntent,
      balance_transaction: expandBalanceTransaction
        ? balanceTransactions.get(refund.balanceTransaction)
        : refund.balanceTransaction,
      status: "pending",
      metadata: { refund_request_id: refund.refundRequestId },
    };
  }

  /** The fields a retrieval expands; anything Stripe would refuse for this object is refused. */
  function expands(query: Form, allowed: readonly string[]): Set<string> {
    only(query, RETRIEVE_KEYS, "query");
    const asked = Object.values(query.expand === undefined ? {} : only(query.expand, ["0", "1", "2"], "expand"));
    for (const field of asked) {
      if (typeof field !== "string" || !allowed.includes(field)) {
        throw new ShapeError(`This property cannot be expanded (${String(field)}).`);
      }
    }
    return new Set(asked as string[]);
  }

  function intentObject(payment: DoublePayment, expand: Set<string>): Record<string, unknown> {
    const bt = payment.balanceTransaction;
    const charge = {
      id: payment.chargeId,
      object: "charge",
      amount: payment.amount,
      amount_captured: payment.amount,
      currency: payment.currency,
      paid: true,
      status: "succeeded",
      payment_intent: payment.paymentIntent,
      balance_transaction: expand.has("latest_charge.balance_transaction") ? bt : (bt?.id ?? null),
    };
    return {
      id: payment.paymentIntent,
      object: "payment_intent",
      amount: payment.amount,
      amount_received: payment.amount,
      currency: payment.currency,
      status: "succeeded",
      latest_charge:
        expand.has("latest_charge") || expand.has("latest_charge.balance_transaction") ? charge : charge.id,
      metadata: { invoice_id: payment.invoiceId },
    };
  }

  /** GET of one object: a PaymentIntent, a refund or a balance transaction; 404 as Stripe's for an unknown id. */
  function retrieve(path: string, query: Form): [number, unknown] {
    const [, , kind, id = ""] = path.split("/");
    const missing: [number, unknown] = [
      404,
      { error: { type: "invalid_request_error", code: "resource_missing", message: `No such object: '${id}'` } },
    ];
    if (kind === "payment_intents") {
      const payment = payments.get(id);
      return payment ? [200, intentObject(payment, expands(query, INTENT_EXPANDS))] : missing;
    }
    if (kind === "refunds") {
      const refund = refunds.find((r) => r.id === id);
      return refund ? [200, refundObject(refund, expands(query, REFUND_EXPANDS).has("balance_transaction"))] : missing;
    }
    expands(query, []);
    return balanceTransactions.has(id) ? [200, balanceTransactions.get(id)] : missing;
  }

  /** GET /v1/{payment_intents,refunds,balance_transactions}/{id}. */
  function getObject(response: ServerResponse, path: string, query: string): void {
    if (failNext.retrievals > 0) {
      failNext.retrievals -= 1;
      stripeError(response, failNext.status, "api_error", "simulated failure");
      return;
    }
    if (!/^\/v1\/(payment_intents|refunds|balance_transactions)\/[A-Za-z0-9_]+$/.test(path)) {
      stripeError(response, 404, "invalid_request_error", `Unrecognized request URL (${path})`);
      return;
    }
    try {
      const [status, answer] = retrieve(path, parseForm(query));
      send(response, status, answer);
    } catch (error) {
      if (!(error instanceof ShapeError)) throw error;
      stripeError(response, 400, "invalid_request_error", error.message);
    }
  }

  async function api(request: IncomingMessage, response: ServerResponse, path: string, query: string): Promise<void> {
    const body = await readBody(request);
    const key = typeof request.headers["idempotency-key"] === "string" ? request.headers["idempotency-key"] : null;
    requests.push({ method: request.method ?? "", path, idempotencyKey: key });
    if (request.headers.authorization !== `Bearer ${DOUBLE_SECRET_KEY}`) {
      return stripeError(response, 401, "invalid_request_error", "Invalid API Key provided");
    }
    if (request.method === "GET") return getObject(response, path, query);
    if (path === "/v1/refunds" && failNext.refunds > 0) {
      failNext.refunds -= 1;
      return stripeError(response, failNext.status, "api_error", "simulated failure");
    }
    const replay = key === null ? undefined : replies.get(`${path} ${key}`);
    if (replay) {
      if (replay.body !== body) {
        return stripeError(
          response,
          400,
          "idempotency_error",
          "Keys for idempotent requests can only be used with the same parameters",
        );
      }
      return send(response, replay.status, replay.answer);
    }
    let status: number;
    let answer: unknown;
    try {
      const form = parseForm(body);
      if (path === "/v1/checkout/sessions") [status, answer] = createSession(form);
      else if (path === "/v1/refunds") [status, answer] = createRefund(form);
      else return stripeError(response, 404, "invalid_request_error", `Unrecognized request URL (${path})`);
    } catch (error) {
      if (!(error instanceof ShapeError)) throw error;
      [status, answer] = [400, { error: { type: "invalid_request_error", message: error.message } }];
    }
    if (key !== null) replies.set(`${path} ${key}`, { body, status, answer });
    send(response, status, answer);
  }

  const server: Server = createServer((request, response) => {
    const [path = "/", query = ""] = (request.url ?? "/").split("?");
    if (request.method === "GET" && path === "/favicon.ico") {
      // Browsers ask for it whatever the page says.
      response.writeHead(204).end();
      return;
    }
    if (request.method === "GET" && path.startsWith("/c/pay/")) {
      // The hosted checkout page the payer lands on.
      const session = sessions.find((s) => path === `/c/pay/${s.id}`);
      response.writeHead(session ? 200 : 404, { "content-type": "text/html; charset=utf-8" });
      response.end(
        `<!doctype html><title>Checkout</title><h1 id="checkout">${session ? `${session.amount} ${session.currency}` : "unknown"}</h1>`,
      );
      return;
    }
    api(request, response, path, query).catch((error: unknown) =>
      stripeError(response, 500, "api_error", String(error)),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    baseUrl,
    requests,
    sessions,
    refunds,
    payments,
    balanceTransactions,
    failNext,
    get settlement() {
      return state.settlement;
    },
    set settlement(value) {
      state.settlement = value;
    },
    get holdBalanceTransactions() {
      return state.hold;
    },
    set holdBalanceTransactions(value) {
      state.hold = value;
    },
    get refundFeeReturned() {
      return state.refundFeeReturned;
    },
    set refundFeeReturned(value) {
      state.refundFeeReturned = value;
    },
    bookCharge,
    event(type, object, options = {}) {
      const body = JSON.stringify({
        id: options.id ?? `evt_${randomBytes(12).toString("hex")}`,
        object: "event",
        type,
        api_version: "2026-10-28.endive",
        created: Math.floor(Date.now() / 1000),
        livemode: false,
        pending_webhooks: 1,
        request: { id: null, idempotency_key: null },
        data: { object },
      });
      const signature = sdk.webhooks.generateTestHeaderString({
        payload: body,
        secret: options.secret ?? DOUBLE_WEBHOOK_SECRET,
      });
      return { body, signature };
    },
    paidSession(session) {
      pay(session);
      return sessionObject(session, true);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The environment of a live service whose card provider is the double. */
export function stripeEnv(double: StripeDouble): Record<string, string> {
  return {
    SERVICE_MODE: "live",
    CARD_PROVIDER: "stripe",
    STRIPE_SECRET_KEY: DOUBLE_SECRET_KEY,
    STRIPE_WEBHOOK_SECRET: DOUBLE_WEBHOOK_SECRET,
    STRIPE_API_BASE: double.baseUrl,
  };
}
