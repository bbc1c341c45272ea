// The newest-first lists of the merchant API and the dashboard: the strict query, the answer's shape, the page window and a list's refusal.
import { type TSchema, Type } from "typebox";
import { INVOICE_STATUSES } from "../domain/invoiceStatus.ts";
import { DEFAULT_PAGE_LIMIT, type ListError, MAX_PAGE_LIMIT, type PageWindow } from "../store/keyset.ts";
import { Problem } from "./problem.ts";

export const Literals = <T extends readonly string[]>(values: T) => Type.Union(values.map((v) => Type.Literal(v)));

export const PayoutRequestStatus = Literals(["processing", "completed", "failed"] as const);
export const InvoiceStatusSchema = Literals(INVOICE_STATUSES);

const Timestamp = (description: string) =>
  Type.String({ format: "date-time", maxLength: 40, description: `RFC 3339 date-time; ${description}` });

/** The query of every list: strict (an unknown parameter is a 400 naming it), coerced from text only where typed. */
export function listQuery<F extends Record<string, TSchema>>(filters: F, idOf: string) {
  return Type.Object(
    {
      limit: Type.Optional(
        Type.Integer({
          minimum: 1,
          maximum: MAX_PAGE_LIMIT,
          description: `1 to ${MAX_PAGE_LIMIT}, default ${DEFAULT_PAGE_LIMIT}`,
        }),
      ),
      starting_after: Type.Optional(
        Type.String({
          minLength: 1,
          maxLength: 500,
          description: `The id of ${idOf} of yours: the page starts after it`,
        }),
      ),
      ...filters,
      created_gte: Type.Optional(Timestamp("only objects created at or after it")),
      created_lt: Type.Optional(Timestamp("only objects created before it")),
    },
    { additionalProperties: false },
  );
}

export function listAnswer<S extends TSchema>(item: S, description: string) {
  return Type.Object(
    {
      data: Type.Array(item, { description: "Newest first (created_at, then id, descending)" }),
      has_more: Type.Boolean({ description: "More match: ask again with the last item's id as starting_after" }),
    },
    { additionalProperties: false, description },
  );
}

/** A query timestamp as stored (ISO-8601 UTC, milliseconds), or a 400 naming the parameter. */
function storedTime(value: string | undefined, parameter: string): string | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  if (!Number.isFinite(ms)) {
    throw new Problem("validation_failed", `The request querystring is invalid.`, [
      { pointer: `/${parameter}`, detail: "must be an RFC 3339 date-time" },
    ]);
  }
  return new Date(ms).toISOString();
}

interface ListQueryValues {
  limit?: number | undefined;
  starting_after?: string | undefined;
  created_gte?: string | undefined;
  created_lt?: string | undefined;
}

/** The store's page window of a validated list query. */
export function pageWindow(query: ListQueryValues): PageWindow {
  return {
    limit: query.limit ?? DEFAULT_PAGE_LIMIT,
    startingAfter: query.starting_after,
    createdGte: storedTime(query.created_gte, "created_gte"),
    createdLt: storedTime(query.created_lt, "created_lt"),
  };
}

/** A list's refusal as a problem: 400 naming starting_after. */
export function listProblem(error: ListError, detail: string | undefined): Problem {
  const text = detail ?? "starting_after is not an object of this merchant";
  return new Problem(error, `${text.charAt(0).toUpperCase()}${text.slice(1)}.`, [
    { pointer: "/starting_after", detail: "is not an object of this merchant" },
  ]);
}
