// TypeBox schemas shared across routes: they validate requests, type handlers and feed the OpenAPI document.
import { Type } from "typebox";
import { Nullable } from "../domain/shapes.ts";

export { HttpUrl, MoneyString, Nullable } from "../domain/shapes.ts";

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

/** How a catalog entry's tokens can be paid by signature (product §28); null: transfers only. */
export const CatalogAuthorizationSchema = Type.Union(
  [
    Type.Object(
      {
        kind: Type.Literal("eip3009"),
        name: Type.String({ minLength: 1, maxLength: 100, description: "The token's EIP-712 domain name" }),
        version: Type.String({ minLength: 1, maxLength: 20, description: "The token's EIP-712 domain version" }),
      },
      { additionalProperties: false },
    ),
    Type.Object({ kind: Type.Literal("permit2") }, { additionalProperties: false }),
    Type.Null(),
  ],
  { description: "How the entry's tokens can be paid by signature (product §28); null: transfers only" },
);

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
    authorization: CatalogAuthorizationSchema,
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
