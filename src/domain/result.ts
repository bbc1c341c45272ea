// Expected outcomes as values: an operation either succeeds with a value or fails with a stable code.
export type Result<T, E extends string = string> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly error: E; readonly detail?: string };

export function ok<T>(value: T): { readonly ok: true; readonly value: T } {
  return { ok: true, value };
}

export function err<E extends string>(
  error: E,
  detail?: string,
): { readonly ok: false; readonly error: E; readonly detail?: string } {
  return detail === undefined ? { ok: false, error } : { ok: false, error, detail };
}

/**
 * A broken invariant: never an expected outcome, always a bug. The one assertion style of src/:
 * `assert` for a condition, `assertOk` for a result that cannot fail there, and `invariantViolation`
 * only where the error is rejected or returned rather than thrown.
 */
export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw invariantViolation(message);
}

/** A result that cannot fail here: a failure is a broken invariant, thrown with its code and detail. */
export function assertOk<T, E extends string>(
  result: Result<T, E>,
  message: string,
): asserts result is { readonly ok: true; readonly value: T } {
  if (!result.ok) {
    const why = result.detail === undefined ? result.error : `${result.error}: ${result.detail}`;
    throw invariantViolation(`${message} (${why})`);
  }
}

/** The error of a broken invariant, for a promise to reject with or a caller to throw. */
export function invariantViolation(message: string): Error {
  return new Error(`invariant violated: ${message}`);
}
