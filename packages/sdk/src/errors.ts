// The SDK's errors: an API answer that is not 2xx (with its problem body), and a request that got no answer.

/** RFC 9457 problem details as the service answers them, with its stable `code`. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  code: string;
  errors?: { pointer: string; detail: string }[];
  [extension: string]: unknown;
}

/** The service answered with an error status. `code` is the problem's stable code. */
export class PaymentsApiError extends Error {
  override readonly name = "PaymentsApiError";
  /** HTTP status of the last answer. */
  readonly status: number;
  /** The problem's `code` (`http_<status>` if the body was not a problem). */
  readonly code: string;
  /** The problem body, or null when the answer was not JSON. */
  readonly problem: Problem | null;
  /** The request id sent (signed operations), so that the operation can be retried or looked up. */
  readonly requestId: string | undefined;
  /** How many attempts were made (1 + retries). */
  readonly attempts: number;

  constructor(init: { status: number; problem: Problem | null; requestId?: string; attempts: number; text?: string }) {
    const code = init.problem?.code ?? `http_${init.status}`;
    super(`${init.status} ${code}: ${init.problem?.detail ?? init.text?.slice(0, 200) ?? "no detail"}`);
    this.status = init.status;
    this.code = code;
    this.problem = init.problem;
    this.requestId = init.requestId;
    this.attempts = init.attempts;
  }
}

/** No answer came back: a network error or a timeout, after every allowed retry. */
export class PaymentsConnectionError extends Error {
  override readonly name = "PaymentsConnectionError";
  /** `timeout` when the attempt ran out of time, else `network`. */
  readonly code: "timeout" | "network";
  readonly requestId: string | undefined;
  readonly attempts: number;

  constructor(init: { code: "timeout" | "network"; requestId?: string; attempts: number; cause: unknown }) {
    super(
      init.code === "timeout"
        ? `the request timed out after ${init.attempts} attempt(s)`
        : `the request failed after ${init.attempts} attempt(s): ${describe(init.cause)}`,
      { cause: init.cause },
    );
    this.code = init.code;
    this.requestId = init.requestId;
    this.attempts = init.attempts;
  }
}

/** A callback that does not verify: missing headers, a timestamp out of tolerance, or no matching signature. */
export class CallbackVerificationError extends Error {
  override readonly name = "CallbackVerificationError";
  readonly code: "missing_headers" | "timestamp_out_of_tolerance" | "invalid_signature" | "invalid_body";

  constructor(code: CallbackVerificationError["code"], message: string) {
    super(message);
    this.code = code;
  }
}

function describe(cause: unknown): string {
  if (cause instanceof Error) {
    const inner = (cause as { cause?: unknown }).cause;
    return inner instanceof Error ? `${cause.message} (${inner.message})` : cause.message;
  }
  return String(cause);
}
