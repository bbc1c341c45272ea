// Refusals of the use cases in src/app: a business rule that failed, as a value with a stable code, after its transaction rolled back.
import { ok } from "../domain/result.ts";
import { type ErrorCode, Problem } from "./problem.ts";

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
}

/** What a use case answers: its value, or the refusal of one of its rules. */
export type Outcome<T, C extends string = string> = { ok: true; value: T } | { ok: false; refusal: Refusal<C> };

/** A refusal as the problem a handler answers (400 or the code's own status), naming its field. */
export function refusalProblem(refusal: Refusal<ErrorCode>): Problem {
  const { code, detail, pointer, fieldDetail } = refusal;
  return new Problem(code, detail, fieldDetail === null ? undefined : [{ pointer, detail: fieldDetail ?? detail }]);
}

/** The value of an outcome, or its refusal thrown as a problem (for handlers, whose error handler answers it). */
export function valueOrProblem<T>(outcome: Outcome<T, ErrorCode>): T {
  if (!outcome.ok) throw refusalProblem(outcome.refusal);
  return outcome.value;
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
export async function withRefusals<T, C extends string>(work: () => Promise<T>): Promise<Outcome<T, C>> {
  try {
    return ok(await work());
  } catch (error) {
    if (error instanceof Refused) return { ok: false, refusal: error.refusal as Refusal<C> };
    throw error;
  }
}
