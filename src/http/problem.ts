// RFC 9457 problem details: the one place where error codes become HTTP statuses and bodies.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";

/** Every stable error code the service answers with, and its HTTP status. */
export const ERROR_STATUS = {
  // 400: the request was understood and refused
  validation_failed: 400,
  malformed_json: 400,
  duplicate_member_name: 400,
  unknown_currency: 400,
  invalid_amount: 400,
  amount_not_positive: 400,
  amount_too_precise: 400,
  insufficient_balance: 400,
  invalid_limits: 400,
  invalid_fee_percent: 400,
  callback_url_invalid: 400,
  callback_url_not_allowed: 400,
  // 401 / 403: who is asking
  unauthorized: 401,
  invalid_api_key: 401,
  invalid_admin_token: 401,
  forbidden: 403,
  // 404 / 405 / 409 / 413 / 415 / 429
  not_found: 404,
  merchant_not_found: 404,
  currency_not_found: 404,
  api_key_not_found: 404,
  invoice_not_found: 404,
  callback_event_not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  email_taken: 409,
  callback_delivery_in_progress: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  // 5xx: our fault, never the client's input
  internal_error: 500,
  service_unavailable: 503,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof ERROR_STATUS;

const TITLES: Partial<Record<number, string>> = {
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  409: "Conflict",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  429: "Too Many Requests",
  500: "Internal Server Error",
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

export function sendProblem(reply: FastifyReply, problem: Problem): FastifyReply {
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
  const status = error.statusCode ?? 500;
  if (status === 429) return new Problem("rate_limited", "Too many requests for this API key; retry later.");
  if (status === 413) return new Problem("payload_too_large", "Request bodies are limited to 64 KiB.");
  if (status === 415) return new Problem("unsupported_media_type", "This route takes application/json bodies.");
  if (status === 404) return new Problem("not_found", "No such resource.");
  if (status >= 400 && status < 500) return new Problem("validation_failed", error.message);
  return new Problem("internal_error", "An unexpected error occurred; it has been logged.");
}

export function registerProblemHandlers(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const problem = toProblem(error);
    if (problem.status >= 500) request.log.error({ err: error }, "request failed");
    return sendProblem(reply, problem);
  });
  app.setNotFoundHandler((request, reply) =>
    sendProblem(reply, new Problem("not_found", `No route ${request.method} ${request.url.split("?")[0]}.`)),
  );
}
