// RFC 9457 problem details: the one place where error codes become HTTP statuses and bodies.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { isStoreUnavailable } from "../store/unavailable.ts";

/** Every stable error code the service answers with, and its HTTP status. */
export const ERROR_STATUS = {
  // 400: the request was understood and refused
  validation_failed: 400,
  malformed_json: 400,
  duplicate_member_name: 400,
  unknown_currency: 400,
  currency_unavailable: 400,
  invalid_amount: 400,
  amount_not_positive: 400,
  amount_too_precise: 400,
  insufficient_balance: 400,
  invalid_limits: 400,
  invalid_fee_percent: 400,
  invalid_url: 400,
  invalid_text: 400,
  payments_unsettled: 400,
  amount_negative: 400,
  amount_exponent_not_allowed: 400,
  merchant_receive_amount_not_positive: 400,
  invalid_expires_at: 400,
  expires_at_not_future: 400,
  expires_at_too_far: 400,
  sender_address_not_applicable: 400,
  withdrawal_method_not_found: 400,
  withdrawal_method_currency_mismatch: 400,
  withdrawal_method_disabled: 400,
  withdrawal_method_cooling_off: 400,
  merchant_not_active: 400,
  amount_below_minimum: 400,
  amount_above_maximum: 400,
  callback_url_invalid: 400,
  callback_url_not_allowed: 400,
  refund_invoice_not_found: 400,
  invoice_currency_is_fiat: 400,
  settlement_not_fiat: 400,
  refund_exists: 400,
  invoice_not_completed: 400,
  sender_address_unavailable: 400,
  refund_destination_ambiguous: 400,
  refund_destination_missing: 400,
  refund_destination_not_allowed: 400,
  amount_exceeds_refundable: 400,
  amount_below_network_fee: 400,
  payment_link_amount_invalid: 400,
  amount_out_of_bounds: 400,
  starting_after_not_found: 400,
  password_too_short: 400,
  password_blank: 400,
  password_too_common: 400,
  totp_invalid: 400,
  totp_not_enrolled: 400,
  invalid_address: 400,
  invalid_network: 400,
  invalid_rpc_url: 400,
  invalid_explorer_url: 400,
  network_unreachable: 400,
  invalid_fee_cap: 400,
  chain_id_mismatch: 400,
  invalid_currency: 400,
  invalid_resolution: 400,
  invalid_rate_source: 400,
  invalid_webhook_signature: 400,
  card_amount_not_representable: 400,
  // 401 / 403: who is asking
  unauthorized: 401,
  invalid_api_key: 401,
  invalid_admin_token: 401,
  invalid_metrics_token: 401,
  invalid_timestamp: 401,
  invalid_request_id: 401,
  invalid_signature_format: 401,
  invalid_signature: 401,
  forbidden: 403,
  session_required: 401,
  signin_failed: 401,
  totp_required: 401,
  step_up_failed: 401,
  csrf_failed: 403,
  cross_site_request: 403,
  role_forbidden: 403,
  step_up_required: 403,
  invitation_invalid: 404,
  user_not_found: 404,
  last_owner: 409,
  default_callback_url_missing: 409,
  api_key_reissue_required: 403,
  // 404 / 405 / 409 / 413 / 415 / 429
  not_found: 404,
  merchant_not_found: 404,
  currency_not_found: 404,
  api_key_not_found: 404,
  withdrawal_method_unknown: 404,
  invoice_not_found: 404,
  withdrawal_not_found: 404,
  refund_not_found: 404,
  refund_claim_not_found: 404,
  payment_link_not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  decimals_locked: 409,
  invoice_already_resolved: 409,
  network_in_use: 409,
  payments_unconfirmed: 409,
  nothing_to_resolve: 409,
  email_taken: 409,
  withdrawal_method_limit_reached: 409,
  idempotency_key_reused: 409,
  invoice_not_payable: 409,
  card_payment_unavailable: 409,
  invoice_not_in_aml_check: 409,
  payment_conflict: 409,
  nothing_due: 409,
  invoice_status_changed: 409,
  payout_not_found: 404,
  request_id_reused: 409,
  request_id_unavailable: 409,
  request_in_progress: 409,
  request_needs_reconciliation: 409,
  payout_already_settled: 409,
  payout_outcome_contradicts_chain: 409,
  payout_transaction_pending: 409,
  callback_event_not_found: 404,
  callback_delivery_in_progress: 409,
  refund_claim_closed: 409,
  refund_claim_expired: 410,
  payment_link_inactive: 410,
  payload_too_large: 413,
  uri_too_long: 414,
  unsupported_media_type: 415,
  rate_limited: 429,
  too_many_streams: 429,
  // 5xx: our fault, never the client's input
  internal_error: 500,
  service_unavailable: 503,
  store_unavailable: 503,
  chain_unavailable: 503,
  node_unavailable: 503,
  rate_unavailable: 503,
  card_provider_unavailable: 503,
  card_provider_refused: 502,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof ERROR_STATUS;

const TITLES: Partial<Record<number, string>> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  409: "Conflict",
  410: "Gone",
  413: "Content Too Large",
  414: "URI Too Long",
  415: "Unsupported Media Type",
  429: "Too Many Requests",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
};

export interface FieldError {
  /** JSON Pointer into the request body (or `/` for the body itself). */
  pointer: string;
  detail: string;
}

/** A problem the HTTP layer answers with; thrown by handlers and hooks, formatted by the error handler. */
export class Problem extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    readonly errors?: FieldError[],
    /** Sent as Retry-After: when trying again may succeed (a rate feed that was stale or unreadable). */
    readonly retryAfterSeconds?: number,
  ) {
    super(detail);
    this.status = ERROR_STATUS[code];
  }
}

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  instance?: string;
  errors?: FieldError[];
}

export function problemBody(problem: Problem, instance?: string): ProblemBody {
  const body: ProblemBody = {
    type: `/docs/errors#${problem.code}`,
    title: TITLES[problem.status] ?? "Error",
    status: problem.status,
    detail: problem.detail,
    code: problem.code,
  };
  if (instance !== undefined) body.instance = instance;
  if (problem.errors !== undefined) body.errors = problem.errors;
  return body;
}

/** The problem code each reply answered with (metrics count refused operations by code). */
const answeredProblems = new WeakMap<FastifyReply, ErrorCode>();

export function problemCodeOf(reply: FastifyReply): ErrorCode | undefined {
  return answeredProblems.get(reply);
}

export function sendProblem(reply: FastifyReply, problem: Problem): FastifyReply {
  answeredProblems.set(reply, problem.code);
  if (problem.retryAfterSeconds !== undefined) reply.header("retry-after", String(problem.retryAfterSeconds));
  return reply
    .code(problem.status)
    .type("application/problem+json")
    .send(problemBody(problem, reply.request.url.split("?")[0]));
}

interface AjvError {
  instancePath?: string;
  keyword?: string;
  message?: string;
  params?: Record<string, unknown>;
}

function fieldErrors(validation: AjvError[]): FieldError[] {
  return validation.map((v) => {
    let pointer = v.instancePath || "/";
    if (v.keyword === "required" && typeof v.params?.missingProperty === "string") {
      pointer = `${v.instancePath ?? ""}/${v.params.missingProperty}`;
      return { pointer, detail: "is required" };
    }
    if (v.keyword === "additionalProperties" && typeof v.params?.additionalProperty === "string") {
      pointer = `${v.instancePath ?? ""}/${v.params.additionalProperty}`;
      return { pointer, detail: "is not an allowed property" };
    }
    return { pointer, detail: v.message ?? "is invalid" };
  });
}

/** Maps Fastify's own errors (parsing, limits, validation) onto our codes. */
export function toProblem(error: FastifyError & { validation?: AjvError[] }): Problem {
  if (error instanceof Problem) return error;
  if (error.validation) {
    const where = (error as { validationContext?: string }).validationContext ?? "body";
    return new Problem("validation_failed", `The request ${where} is invalid.`, fieldErrors(error.validation));
  }
  switch (error.code) {
    case "FST_ERR_BAD_URL":
      return new Problem("invalid_url", "The request path is not a valid URL.");
    case "FST_ERR_MAX_PARAM_LENGTH":
      return new Problem("uri_too_long", "A path parameter is too long.");
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return new Problem("unsupported_media_type", "This route takes application/json bodies.");
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return new Problem("payload_too_large", "Request bodies are limited to 64 KiB.");
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
    case "FST_ERR_CTP_INVALID_JSON_BODY":
      return new Problem("malformed_json", "The request body is not valid JSON.");
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return new Problem("validation_failed", "The content-length header does not match the body.");
  }
  // The database went away (lost connection, refused connect, a locked or failing file): the
  // transaction rolled back, so the request changed nothing and may be retried as it is.
  if (isStoreUnavailable(error)) {
    return new Problem("store_unavailable", "The database is unavailable; nothing was changed. Retry later.");
  }
  const status = error.statusCode ?? 500;
  if (status === 429) return new Problem("rate_limited", "Too many requests for this API key; retry later.");
  if (status === 413) return new Problem("payload_too_large", "Request bodies are limited to 64 KiB.");
  if (status === 415) return new Problem("unsupported_media_type", "This route takes application/json bodies.");
  if (status === 404) return new Problem("not_found", "No such resource.");
  if (status >= 400 && status < 500) return new Problem("validation_failed", error.message);
  return new Problem("internal_error", "An unexpected error occurred; it has been logged.");
}

/** Errors the router raises before any route runs (bad percent-encoding, over-long parameters). */
export function frameworkErrors(error: FastifyError, _request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return sendProblem(reply, toProblem(error));
}

export function registerProblemHandlers(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const problem = toProblem(error);
    if (problem.code === "store_unavailable") request.log.warn({ err: error }, "store unavailable");
    else if (problem.status >= 500) request.log.error({ err: error }, "request failed");
    return sendProblem(reply, problem);
  });
  app.setNotFoundHandler((request, reply) =>
    sendProblem(reply, new Problem("not_found", `No route ${request.method} ${request.url.split("?")[0]}.`)),
  );
}
