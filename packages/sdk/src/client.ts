// PaymentsClient: one method per operation of the merchant API, with signing and safe retries (product §16).
import { randomUUID } from "node:crypto";
import { PaymentsApiError, PaymentsConnectionError, type Problem } from "./errors.ts";
import type {
  CreatedRefund,
  CreatePaymentLinkParams,
  CreateRefundParams,
  PaymentLink,
  PaymentLinkInvoice,
} from "./refundsAndLinks.ts";
import { signRequest } from "./signing.ts";
import type {
  Balance,
  Country,
  CreateDepositAddressParams,
  CreateInvoiceParams,
  CreatePlanParams,
  CreateSubscriptionParams,
  CreateWithdrawalParams,
  Currency,
  Deposit,
  DepositAddress,
  DepositStatus,
  EstimateFeesParams,
  FeeEstimate,
  Invoice,
  Merchant,
  PaymentsEvent,
  Plan,
  RefundCryptoParams,
  RefundFiatParams,
  RefundRequest,
  Subscription,
  SubscriptionStatus,
  WithdrawalRequest,
} from "./types.ts";

export interface PaymentsClientOptions {
  /** The service's base address, e.g. `https://pay.example.com` (no `/public/v1`). */
  baseUrl: string;
  /** The merchant's API key (x-api-key). Reference calls (version, currencies, countries) work without one. */
  apiKey: string;
  /** The secret key shown once with the API key; needed by the signed operations (withdrawals, refunds, subscriptions). */
  secretKey?: string;
  /** Time allowed for each attempt (default 30000). */
  timeoutMs?: number;
  /** Retries after the first attempt (default 2, at most 10). */
  maxRetries?: number;
  /** A fetch implementation (default the global fetch of Node 18+). */
  fetch?: typeof fetch;
}

/** Options of a signed operation. */
export interface SignedOptions {
  /**
   * The request id of this logical operation (a UUID). Keep it with your own record of the
   * operation: sending it again can never pay twice. Default: a new random UUID.
   */
  requestId?: string;
}

/** A page of a list (product §15). */
export interface Page<T> {
  data: T[];
  has_more: boolean;
}

/** Filters and paging of the lists (product §15). */
export interface ListParams<Status extends string = string> {
  /** 1–100 per page (the service's default is 20). */
  limit?: number;
  /** The id after which the page starts (the last id of the previous page). */
  starting_after?: string;
  status?: Status;
  /** RFC 3339 lower bound (inclusive) of `created_at`. */
  created_gte?: string;
  /** RFC 3339 upper bound (exclusive) of `created_at`. */
  created_lt?: string;
}

/** Filters and paging of the invoice list, with the payment link filters. */
export interface InvoiceListParams extends ListParams<Invoice["status"]> {
  /** Only the invoices this payment link made. */
  paymentLinkId?: string;
  /** false: leave out the abandoned invoices (a payment link's invoices that expired with nothing paid); true: only those. */
  abandoned?: boolean;
}

/** Filters and paging of the subscription list: by status, plan or the customer's reference. */
export interface SubscriptionListParams extends ListParams<SubscriptionStatus> {
  planId?: string;
  /** The customer's reference, exactly. */
  customer?: string;
}

/** Filters and paging of the deposit address list: one customer's (the merchant's reference, exactly). */
export interface DepositAddressListParams extends Omit<ListParams, "status"> {
  customer?: string;
}

/** Filters and paging of the deposit list: by address, status or network. */
export interface DepositListParams extends ListParams<DepositStatus> {
  deposit_address_id?: string;
  network?: string;
}

/** Filters and paging of the event list: `type` instead of `status`. */
export interface EventListParams extends Omit<ListParams, "status"> {
  type?: PaymentsEvent["type"];
}

const DEFAULT_TIMEOUT_MS = 30_000;
const DEFAULT_MAX_RETRIES = 2;
const MAX_RETRIES_CAP = 10;
const INITIAL_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 8_000;
/** A Retry-After longer than this is not waited for: the error goes back to the caller. */
const MAX_RETRY_AFTER_MS = 60_000;
/** Pages an async-iterable list fetches before it stops, so that no loop is unbounded. */
const MAX_PAGES = 10_000;

/** The 409 code that says the operation with this request id is still running (src/http/signed.ts). */
const IN_PROGRESS_CODE = "request_in_progress";

interface Call {
  method: "GET" | "POST" | "PATCH";
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  auth: "none" | "key" | "signed";
  requestId?: string;
  /** Whether a lost answer may be asked for again (true for reads and idempotent writes). */
  retryable: boolean;
}

type Outcome =
  | { kind: "answer"; status: number; headers: Headers; text: string }
  | { kind: "failure"; code: "timeout" | "network"; cause: unknown };

export class PaymentsClient {
  readonly baseUrl: string;
  readonly #apiKey: string;
  readonly #secretKey: string | undefined;
  readonly #timeoutMs: number;
  readonly #maxRetries: number;
  readonly #fetch: typeof fetch;

  constructor(options: PaymentsClientOptions) {
    if (typeof options?.baseUrl !== "string" || options.baseUrl === "") throw new TypeError("baseUrl is required");
    const url = new URL(options.baseUrl);
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new TypeError("baseUrl must be http(s)");
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.#apiKey = options.apiKey ?? "";
    this.#secretKey = options.secretKey;
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new RangeError("timeoutMs must be a positive number");
    this.#timeoutMs = timeoutMs;
    const maxRetries = options.maxRetries ?? DEFAULT_MAX_RETRIES;
    if (!Number.isInteger(maxRetries) || maxRetries < 0 || maxRetries > MAX_RETRIES_CAP) {
      throw new RangeError(`maxRetries must be an integer from 0 to ${MAX_RETRIES_CAP}`);
    }
    this.#maxRetries = maxRetries;
    this.#fetch = options.fetch ?? globalThis.fetch;
  }

  /** GetVersion: the API version, e.g. "1.0.0". */
  async getVersion(): Promise<string> {
    return this.#request({ method: "GET", path: "/public/v1/version", auth: "none", retryable: true });
  }

  /** Currencies: the supported currencies. */
  async listCurrencies(): Promise<Currency[]> {
    return this.#request({ method: "GET", path: "/public/v1/currencies", auth: "none", retryable: true });
  }

  /** Countries. */
  async listCountries(): Promise<Country[]> {
    return this.#request({ method: "GET", path: "/public/v1/countries", auth: "none", retryable: true });
  }

  /** Me: the merchant of the API key. */
  async me(): Promise<Merchant> {
    return this.#request({ method: "GET", path: "/public/v1/me", auth: "key", retryable: true });
  }

  /**
   * CreateInvoice. Without an `idempotencyKey` the SDK adds a new UUID, so that a retry after a
   * lost answer returns the same invoice instead of creating a second one.
   */
  async createInvoice(params: CreateInvoiceParams): Promise<Invoice> {
    const body = { ...params, idempotencyKey: params.idempotencyKey ?? randomUUID() };
    return this.#request({ method: "POST", path: "/public/v1/invoices/create", body, auth: "key", retryable: true });
  }

  /** EstimateFees: what an invoice would cost, without creating it. */
  async estimateFees(params: EstimateFeesParams): Promise<FeeEstimate> {
    return this.#request({
      method: "POST",
      path: "/public/v1/invoices/estimateFees",
      body: params,
      auth: "key",
      retryable: true,
    });
  }

  /** GetInvoice. */
  async getInvoice(id: string): Promise<Invoice> {
    return this.#request({ method: "GET", path: `/public/v1/invoices/${segment(id)}`, auth: "key", retryable: true });
  }

  /** GetInvoicesByOrderId: the merchant's invoices with this order number. */
  async getInvoicesByOrderId(orderNo: string): Promise<Invoice[]> {
    return this.#request({
      method: "GET",
      path: `/public/v1/invoices/byOrder/${segment(orderNo)}`,
      auth: "key",
      retryable: true,
    });
  }

  /** CreateWithdrawal (signed). Retried safely under the same request id. */
  async createWithdrawal(
    params: CreateWithdrawalParams,
    options: SignedOptions = {},
  ): Promise<{ request: WithdrawalRequest }> {
    return this.#signed("/public/v1/withdrawals/create", params, options);
  }

  /** RefundCrypto (signed). */
  async refundCrypto(params: RefundCryptoParams, options: SignedOptions = {}): Promise<{ request: RefundRequest }> {
    return this.#signed("/public/v1/refunds/refundCrypto", params, options);
  }

  /** RefundFiat (signed). */
  async refundFiat(params: RefundFiatParams, options: SignedOptions = {}): Promise<{ request: RefundRequest }> {
    return this.#signed("/public/v1/refunds/refundFiat", params, options);
  }

  // Refunds beyond the interface and payment links (product §25).

  /**
   * POST /public/v1/refunds/create (signed): part or all of an invoice, several per invoice, to an
   * address, the sender, or a claim link (`claim: true` answers `claimUrl`). Retried safely under
   * the same request id.
   */
  async createRefund(params: CreateRefundParams, options: SignedOptions = {}): Promise<CreatedRefund> {
    return this.#signed("/public/v1/refunds/create", params, options);
  }

  /** POST /public/v1/payment-links. Not retried after a lost answer: a retry could make a second link. */
  async createPaymentLink(params: CreatePaymentLinkParams): Promise<PaymentLink> {
    return this.#request({
      method: "POST",
      path: "/public/v1/payment-links",
      body: params,
      auth: "key",
      retryable: false,
    });
  }

  async getPaymentLink(id: string): Promise<PaymentLink> {
    return this.#request({
      method: "GET",
      path: `/public/v1/payment-links/${segment(id)}`,
      auth: "key",
      retryable: true,
    });
  }

  /** PATCH /public/v1/payment-links/{id}: `active: false` deactivates the link (its URL then answers 410). */
  async updatePaymentLink(id: string, params: { active: boolean }): Promise<PaymentLink> {
    return this.#request({
      method: "PATCH",
      path: `/public/v1/payment-links/${segment(id)}`,
      body: params,
      auth: "key",
      retryable: true,
    });
  }

  async listPaymentLinksPage(params: Omit<ListParams, "status"> = {}): Promise<Page<PaymentLink>> {
    return this.#page("/public/v1/payment-links", params);
  }

  /** Every payment link, newest first, fetched page by page as you iterate. */
  listPaymentLinks(params: Omit<ListParams, "status"> = {}): AsyncIterable<PaymentLink> {
    return this.#iterate((p) => this.listPaymentLinksPage(p), params);
  }

  /** The invoices a payment link made, newest first (at most 100). */
  async listPaymentLinkInvoices(id: string): Promise<{ data: PaymentLinkInvoice[] }> {
    return this.#request({
      method: "GET",
      path: `/public/v1/payment-links/${segment(id)}/invoices`,
      auth: "key",
      retryable: true,
    });
  }

  // Customers' deposit addresses and their deposits (product §30).

  /**
   * POST /public/v1/deposit-addresses: the customer's address in the currency, made on the first
   * call and the same one after (in parallel too), so a lost answer is simply asked for again.
   */
  async createDepositAddress(params: CreateDepositAddressParams): Promise<DepositAddress> {
    return this.#request({
      method: "POST",
      path: "/public/v1/deposit-addresses",
      body: params,
      auth: "key",
      retryable: true,
    });
  }

  async getDepositAddress(id: string): Promise<DepositAddress> {
    return this.#request({
      method: "GET",
      path: `/public/v1/deposit-addresses/${segment(id)}`,
      auth: "key",
      retryable: true,
    });
  }

  /** PATCH /public/v1/deposit-addresses/{id}: `active: false` holds later transfers for the merchant's decision. */
  async updateDepositAddress(id: string, params: { active: boolean }): Promise<DepositAddress> {
    return this.#request({
      method: "PATCH",
      path: `/public/v1/deposit-addresses/${segment(id)}`,
      body: params,
      auth: "key",
      retryable: true,
    });
  }

  async listDepositAddressesPage(params: DepositAddressListParams = {}): Promise<Page<DepositAddress>> {
    return this.#page("/public/v1/deposit-addresses", params);
  }

  /** Every deposit address (one customer's with `customer`), newest first, fetched page by page as you iterate. */
  listDepositAddresses(params: DepositAddressListParams = {}): AsyncIterable<DepositAddress> {
    return this.#iterate((p) => this.listDepositAddressesPage(p), params);
  }

  async getDeposit(id: string): Promise<Deposit> {
    return this.#request({ method: "GET", path: `/public/v1/deposits/${segment(id)}`, auth: "key", retryable: true });
  }

  async listDepositsPage(params: DepositListParams = {}): Promise<Page<Deposit>> {
    return this.#page("/public/v1/deposits", params);
  }

  /** Every deposit matching the filters, newest first, fetched page by page as you iterate. */
  listDeposits(params: DepositListParams = {}): AsyncIterable<Deposit> {
    return this.#iterate((p) => this.listDepositsPage(p), params);
  }

  // Plans and subscriptions (product §29).

  /** POST /public/v1/plans. Not retried after a lost answer: a retry could make a second plan. */
  async createPlan(params: CreatePlanParams): Promise<Plan> {
    return this.#request({ method: "POST", path: "/public/v1/plans", body: params, auth: "key", retryable: false });
  }

  async getPlan(id: string): Promise<Plan> {
    return this.#request({ method: "GET", path: `/public/v1/plans/${segment(id)}`, auth: "key", retryable: true });
  }

  /** PATCH /public/v1/plans/{id}: `active: false` retires the plan (no new subscriptions; its subscriptions continue). */
  async updatePlan(id: string, params: { active: boolean }): Promise<Plan> {
    return this.#request({
      method: "PATCH",
      path: `/public/v1/plans/${segment(id)}`,
      body: params,
      auth: "key",
      retryable: true,
    });
  }

  async listPlansPage(params: Omit<ListParams, "status"> = {}): Promise<Page<Plan>> {
    return this.#page("/public/v1/plans", params);
  }

  /** Every plan, newest first, fetched page by page as you iterate. */
  listPlans(params: Omit<ListParams, "status"> = {}): AsyncIterable<Plan> {
    return this.#iterate((p) => this.listPlansPage(p), params);
  }

  /**
   * POST /public/v1/subscriptions (signed): subscribes a customer to a plan; trialing, or incomplete
   * with its first invoice as `openInvoice`. Retried safely under the same request id.
   */
  async createSubscription(params: CreateSubscriptionParams, options: SignedOptions = {}): Promise<Subscription> {
    return this.#signed("/public/v1/subscriptions", params, options);
  }

  async getSubscription(id: string): Promise<Subscription> {
    return this.#request({
      method: "GET",
      path: `/public/v1/subscriptions/${segment(id)}`,
      auth: "key",
      retryable: true,
    });
  }

  async listSubscriptionsPage(params: SubscriptionListParams = {}): Promise<Page<Subscription>> {
    return this.#page("/public/v1/subscriptions", params);
  }

  /** Every subscription matching the filters, newest first, fetched page by page as you iterate. */
  listSubscriptions(params: SubscriptionListParams = {}): AsyncIterable<Subscription> {
    return this.#iterate((p) => this.listSubscriptionsPage(p), params);
  }

  /**
   * Cancels now (the default: its open invoice is closed) or, with `atPeriodEnd: true`, at the end
   * of the current period. Cancelling again answers the subscription as it is, so it is retried.
   */
  async cancelSubscription(id: string, params: { atPeriodEnd?: boolean } = {}): Promise<Subscription> {
    return this.#request({
      method: "POST",
      path: `/public/v1/subscriptions/${segment(id)}/cancel`,
      body: params,
      auth: "key",
      retryable: true,
    });
  }

  /** The plan from the next period on (the one after, when the next period's invoice is already made). */
  async changeSubscriptionPlan(id: string, params: { planId: string }): Promise<Subscription> {
    return this.#request({
      method: "POST",
      path: `/public/v1/subscriptions/${segment(id)}/change-plan`,
      body: params,
      auth: "key",
      retryable: true,
    });
  }

  /**
   * Sandbox only: the subscription's test clock moves to `to` (RFC 3339) and its schedule runs up to
   * then (invoices, statuses, events). Advancing to the same time again changes nothing.
   */
  async advanceSubscription(id: string, params: { to: string }): Promise<Subscription> {
    return this.#request({
      method: "POST",
      path: `/sandbox/v1/subscriptions/${segment(id)}/advance`,
      body: params,
      auth: "key",
      retryable: true,
    });
  }

  // API extensions (product §15).

  /** GET /public/v1/withdrawals/{id}: a withdrawal in its current state. */
  async getWithdrawal(id: string): Promise<{ request: WithdrawalRequest }> {
    return this.#request({
      method: "GET",
      path: `/public/v1/withdrawals/${segment(id)}`,
      auth: "key",
      retryable: true,
    });
  }

  /** GET /public/v1/balances: the merchant's available balance per catalog entry. */
  async getBalances(): Promise<Balance[]> {
    return this.#request({ method: "GET", path: "/public/v1/balances", auth: "key", retryable: true });
  }

  /** GET /public/v1/refunds/{id}: a refund in its current state. */
  async getRefund(id: string): Promise<{ request: RefundRequest }> {
    return this.#request({ method: "GET", path: `/public/v1/refunds/${segment(id)}`, auth: "key", retryable: true });
  }

  /** One page of invoices, newest first. */
  async listInvoicesPage(params: InvoiceListParams = {}): Promise<Page<Invoice>> {
    return this.#page("/public/v1/invoices", params);
  }

  /** Every invoice matching the filters, newest first, fetched page by page as you iterate. */
  listInvoices(params: InvoiceListParams = {}): AsyncIterable<Invoice> {
    return this.#iterate((p) => this.listInvoicesPage(p), params);
  }

  async listWithdrawalsPage(params: ListParams<WithdrawalRequest["status"]> = {}): Promise<Page<WithdrawalRequest>> {
    return this.#page("/public/v1/withdrawals", params);
  }

  listWithdrawals(params: ListParams<WithdrawalRequest["status"]> = {}): AsyncIterable<WithdrawalRequest> {
    return this.#iterate((p) => this.listWithdrawalsPage(p), params);
  }

  async listRefundsPage(params: ListParams<RefundRequest["status"]> = {}): Promise<Page<RefundRequest>> {
    return this.#page("/public/v1/refunds", params);
  }

  listRefunds(params: ListParams<RefundRequest["status"]> = {}): AsyncIterable<RefundRequest> {
    return this.#iterate((p) => this.listRefundsPage(p), params);
  }

  /** One page of the merchant's events, newest first, each exactly as its callback body. */
  async listEventsPage(params: EventListParams = {}): Promise<Page<PaymentsEvent>> {
    return this.#page("/public/v1/events", params);
  }

  /** Every event matching the filters, newest first, fetched page by page as you iterate. */
  listEvents(params: EventListParams = {}): AsyncIterable<PaymentsEvent> {
    return this.#iterate((p) => this.listEventsPage(p), params);
  }

  #page<T>(path: string, params: ListParams | EventListParams | InvoiceListParams): Promise<Page<T>> {
    return this.#request({ method: "GET", path, query: { ...params }, auth: "key", retryable: true });
  }

  async *#iterate<T extends { id: string }, P extends ListParams | EventListParams>(
    fetchPage: (params: P) => Promise<Page<T>>,
    params: P,
  ): AsyncGenerator<T> {
    let cursor = params.starting_after;
    for (let pages = 0; pages < MAX_PAGES; pages++) {
      const page = await fetchPage({ ...params, ...(cursor === undefined ? {} : { starting_after: cursor }) });
      yield* page.data;
      const last = page.data.at(-1);
      if (!page.has_more || last === undefined) return;
      cursor = last.id;
    }
  }

  async #signed<T>(path: string, body: unknown, options: SignedOptions): Promise<T> {
    if (this.#secretKey === undefined || this.#secretKey === "") {
      throw new TypeError("this operation is signed: create the client with the secretKey of the API key");
    }
    const requestId = options.requestId ?? randomUUID();
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(requestId)) {
      throw new TypeError("requestId must be a UUID (8-4-4-4-12 hexadecimal)");
    }
    return this.#request({ method: "POST", path, body, auth: "signed", requestId, retryable: true });
  }

  async #request<T>(call: Call): Promise<T> {
    // One serialisation for every attempt: a retry sends the identical body.
    const bodyText = call.body === undefined ? undefined : JSON.stringify(call.body);
    const url = this.baseUrl + call.path + queryString(call.query);
    for (let attempt = 0; ; attempt++) {
      const outcome = await this.#attempt(call, url, bodyText);
      const retryIn = call.retryable && attempt < this.#maxRetries ? retryDelayMs(outcome, attempt) : null;
      if (retryIn !== null) {
        await sleep(retryIn);
        continue;
      }
      const attempts = attempt + 1;
      if (outcome.kind === "failure") {
        throw new PaymentsConnectionError({
          code: outcome.code,
          requestId: call.requestId,
          attempts,
          cause: outcome.cause,
        });
      }
      const json = parseJson(outcome.text, outcome.headers);
      if (outcome.status >= 200 && outcome.status < 300) {
        if (json === undefined) {
          throw new PaymentsApiError({
            status: outcome.status,
            problem: null,
            requestId: call.requestId,
            attempts,
            text: outcome.text,
          });
        }
        return json as T;
      }
      throw new PaymentsApiError({
        status: outcome.status,
        problem: isProblem(json) ? json : null,
        requestId: call.requestId,
        attempts,
        text: outcome.text,
      });
    }
  }

  async #attempt(call: Call, url: string, bodyText: string | undefined): Promise<Outcome> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (bodyText !== undefined) headers["content-type"] = "application/json";
    if (call.auth !== "none" && this.#apiKey !== "") headers["x-api-key"] = this.#apiKey;
    if (call.auth === "signed" && call.requestId !== undefined && this.#secretKey !== undefined) {
      // A fresh timestamp and signature on every attempt; the request id and body stay the same.
      const timestamp = String(Math.floor(Date.now() / 1000));
      headers["x-service-timestamp"] = timestamp;
      headers["x-service-request-id"] = call.requestId;
      headers["x-service-request-signature"] = signRequest({
        path: call.path,
        timestamp,
        requestId: call.requestId,
        body: call.body,
        secretKey: this.#secretKey,
      });
    }
    const signal = AbortSignal.timeout(this.#timeoutMs);
    try {
      const response = await this.#fetch(url, { method: call.method, headers, body: bodyText, signal });
      const text = await response.text();
      return { kind: "answer", status: response.status, headers: response.headers, text };
    } catch (cause) {
      return { kind: "failure", code: signal.aborted ? "timeout" : "network", cause };
    }
  }
}

/** How long to wait before the next attempt, or null when this outcome must not be retried. */
function retryDelayMs(outcome: Outcome, attempt: number): number | null {
  const backoff = () => {
    const ceiling = Math.min(MAX_BACKOFF_MS, INITIAL_BACKOFF_MS * 2 ** attempt);
    // Jitter: between half and all of the ceiling, so that clients that failed together spread out.
    return ceiling / 2 + Math.random() * (ceiling / 2);
  };
  if (outcome.kind === "failure") return backoff();
  const { status } = outcome;
  if (status >= 500) return backoff();
  if (status === 429) {
    const after = retryAfterMs(outcome.headers.get("retry-after"));
    if (after === null) return backoff();
    return after <= MAX_RETRY_AFTER_MS ? Math.max(after, 0) : null;
  }
  if (status === 409) {
    const problem = parseJson(outcome.text, outcome.headers);
    return isProblem(problem) && problem.code === IN_PROGRESS_CODE ? backoff() : null;
  }
  return null;
}

/** Retry-After as delay-seconds or an HTTP date (RFC 9110 §10.2.3). */
function retryAfterMs(value: string | null): number | null {
  if (value === null) return null;
  const trimmed = value.trim();
  if (/^[0-9]+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? null : date - Date.now();
}

function parseJson(text: string, headers: Headers): unknown {
  if (!(headers.get("content-type") ?? "").includes("json") || text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isProblem(value: unknown): value is Problem {
  return typeof value === "object" && value !== null && typeof (value as Problem).code === "string";
}

function queryString(query: Record<string, string | number | boolean | undefined> | undefined): string {
  if (query === undefined) return "";
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value));
  const text = params.toString();
  return text === "" ? "" : `?${text}`;
}

/** A path segment: ids and order numbers are encoded, so that no value can change the route. */
function segment(value: string): string {
  if (typeof value !== "string" || value === "") throw new TypeError("an id must be a non-empty string");
  return encodeURIComponent(value);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
