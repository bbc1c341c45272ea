// Refusals of the use cases in src/app: a business rule that failed, as a value with a stable code, after its transaction rolled back.
import { ok } from "../domain/result.ts";

/** A refused operation: its stable code, a sentence for the caller, and the body field it is about. */
export interface Refusal<C extends string = string> {
  readonly code: C;
  readonly detail: string;
  /** JSON Pointer into the request body, or `/` for the body itself. */
  readonly pointer: string;
  /**
   * The sentence of its field error when it differs from `detail`; null: the refusal names no field
   * (its problem has no `errors`).
   */
  readonly fieldDetail?: string | null;
  /** When trying again may succeed (a rate feed that was stale or unreadable); HTTP sends it as Retry-After. */
  readonly retryAfterSeconds?: number;
}

/** What a use case answers: its value, or the refusal of one of its rules. */
export type Outcome<T, C extends string = string> = { ok: true; value: T } | { ok: false; refusal: Refusal<C> };

/** Thrown inside a transaction so that it rolls back (a refusal may follow writes); caught by withRefusals. */
class Refused extends Error {
  constructor(readonly refusal: Refusal) {
    super(refusal.detail);
  }
}

/**
 * Refuses the running operation: its transaction rolls back and its caller gets the refusal as a
 * value. `fieldDetail` as in `Refusal` (null: no field error).
 */
export function refuse<C extends string>(code: C, detail: string, pointer: string, fieldDetail?: string | null): never {
  throw new Refused(fieldDetail === undefined ? { code, detail, pointer } : { code, detail, pointer, fieldDetail });
}

/** Refuses the running operation with a refusal already made (a check's `Refusal | null` answer). */
export function refuseWith(refusal: Refusal): never {
  throw new Refused(refusal);
}

/** Runs work that may refuse (inside it, its transaction rolls back) and answers the refusal as a value. */
export async function withRefusals<T, C extends string>(work: () => Promise<T>): Promise<Outcome<T, C>> {
  try {
    return ok(await work());
  } catch (error) {
    if (error instanceof Refused) return { ok: false, refusal: error.refusal as Refusal<C> };
    throw error;
  }
}
