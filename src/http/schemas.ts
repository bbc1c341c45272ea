// TypeBox schemas shared across routes: they validate requests, type handlers and feed the OpenAPI document.
import { type Static, type TSchema, Type } from "typebox";

/**
 * A value or null. Written as `type: [<type>, "null"]` rather than `anyOf`: the same JSON Schema
 * meaning, but the response serializer then needs no validator to choose a branch per field.
 */
export const Nullable = <T extends TSchema & { type: string }>(schema: T) =>
  Type.Unsafe<Static<T> | null>({ ...schema, type: [schema.type, "null"] });

/** An absolute http(s) URL the service may call or send a payer to (callback and redirect URLs). */
export const HttpUrl = Type.String({
  minLength: 1,
  maxLength: 2048,
  format: "uri",
  pattern: "^[Hh][Tt][Tt][Pp][Ss]?://",
});

/** A plain decimal monetary string of product §3. */
export const MoneyString = Type.String({ pattern: "^(0|[1-9][0-9]*)(\\.[0-9]*[1-9])?$", examples: ["100.5"] });

export const ProblemSchema = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    code: Type.String({ description: "Stable snake_case error code" }),
    instance: Type.Optional(Type.String()),
    errors: Type.Optional(
      Type.Array(Type.Object({ pointer: Type.String(), detail: Type.String() }, { additionalProperties: false })),
    ),
  },
  { $id: "Problem", additionalProperties: false, description: "RFC 9457 problem details" },
);

export const problemRef = Type.Ref("Problem");

/** Problem responses a route may answer with, for the OpenAPI document. */
export function problems(...statuses: number[]): Record<number, typeof problemRef> {
  return Object.fromEntries(statuses.map((s) => [s, problemRef]));
}

export const CurrencyInfo = Type.Object(
  {
    ticker: Type.String(),
    fullName: Type.String(),
    network: Type.String(),
    contractAddress: Nullable(Type.String()),
    type: Type.Union([Type.Literal("stablecoin"), Type.Literal("fiat"), Type.Literal("token")]),
    icon: Type.String(),
    iconDark: Type.String(),
    internalTicker: Type.String(),
  },
  { additionalProperties: false },
);

export const CountryInfo = Type.Object({ code: Type.String(), name: Type.String() }, { additionalProperties: false });

export const PublicMerchantInfo = Type.Object(
  {
    id: Type.String(),
    email: Type.String(),
    merchantName: Nullable(Type.String()),
    directorName: Nullable(Type.String()),
    website: Nullable(Type.String()),
    logo: Nullable(Type.String()),
    whitelabeling: Type.Boolean(),
  },
  { additionalProperties: false },
);
