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

/** A broken invariant: never an expected outcome, always a bug. */
export function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`invariant violated: ${message}`);
}
