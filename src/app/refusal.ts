// Refusals of the use cases in src/app: a business rule that failed, as a value with a stable code, after its transaction rolled back.
import { ok } from "../domain/result.ts";

/** A refused operation: its stable code, a sentence for the caller, and the body field it is about. */
export interface Refusal<C extends string = string> {
  readonly code: C;
  readonly detail: string;
  /** JSON Pointer into the request body, or `/` for the body itself. */
  readonly pointer: string;
}

/** Thrown inside a transaction so that it rolls back (a refusal may follow writes); caught by withRefusals. */
class Refused extends Error {
  constructor(readonly refusal: Refusal) {
    super(refusal.detail);
  }
}

/** Refuses the running operation: its transaction rolls back and its caller gets the refusal as a value. */
export function refuse<C extends string>(code: C, detail: string, pointer: string): never {
  throw new Refused({ code, detail, pointer });
}

/** Runs work that may refuse (inside it, its transaction rolls back) and answers the refusal as a value. */
export async function withRefusals<T, C extends string>(
  work: () => Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false; refusal: Refusal<C> }> {
  try {
    return ok(await work());
  } catch (error) {
    if (error instanceof Refused) return { ok: false, refusal: error.refusal as Refusal<C> };
    throw error;
  }
}
