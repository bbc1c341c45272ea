// RFC 9457 problem details on the wire: the error handler that turns Fastify's errors, thrown Problems and use cases' refusals into bodies.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Outcome, Refusal } from "../app/refusal.ts";
import { isStoreUnavailable } from "../store/unavailable.ts";
import { ERROR_STATUS, type ErrorCode, type FieldError, Problem } from "./errorCodes.ts";

export { ERROR_STATUS, type ErrorCode, type FieldError, Problem };

/** A use case's refusal as the problem a handler answers (the code's status), naming its field. */
export function refusalProblem(refusal: Refusal<ErrorCode>): Problem {
  const { code, detail, pointer, fieldDetail, retryAfterSeconds } = refusal;
  const errors = fieldDetail === null ? undefined : [{ pointer, detail: fieldDetail ?? detail }];
  return new Problem(code, detail, errors, retryAfterSeconds);
}

/** A check's refusal (a `Refusal | null` answer) thrown as its problem; nothing when it passed. */
export function throwIfRefused(refusal: Refusal<ErrorCode> | null): void {
  if (refusal !== null) throw refusalProblem(refusal);
}

/** The value of a use case's outcome, or its refusal thrown as a problem (the error handler answers it). */
export function valueOrProblem<T>(outcome: Outcome<T, ErrorCode>): T {
  if (!outcome.ok) throw refusalProblem(outcome.refusal);
  return outcome.value;
}

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

/** Records the problem a reply answers with, whether as a problem body or as a payer's page. */
export function noteAnsweredProblem(reply: FastifyReply, problem: Problem): void {
  answeredProblems.set(reply, problem.code);
}

export function sendProblem(reply: FastifyReply, problem: Problem): FastifyReply {
  noteAnsweredProblem(reply, problem);
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

/**
 * The problem of any error a route raised, logged when it is the service's own failure: an error
 * with its stack; a refusal a route answered on purpose because something it needs is down (a 503
 * Problem: the node, the signer, the rates) a warn line with its code, since the stack says nothing.
 */
export function loggedProblem(error: FastifyError, request: FastifyRequest): Problem {
  const problem = toProblem(error);
  if (problem.code === "store_unavailable") request.log.warn({ err: error }, "store unavailable");
  else if (error instanceof Problem && problem.status === 503) {
    request.log.warn({ code: problem.code, detail: problem.detail }, "request refused: a dependency is unavailable");
  } else if (problem.status >= 500) request.log.error({ err: error }, "request failed");
  return problem;
}

export function registerProblemHandlers(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) =>
    sendProblem(reply, loggedProblem(error, request)),
  );
  app.setNotFoundHandler((request, reply) =>
    sendProblem(reply, new Problem("not_found", `No route ${request.method} ${request.url.split("?")[0]}.`)),
  );
}
