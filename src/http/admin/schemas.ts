// Schemas of the operator API.
import { Type } from "typebox";
import { MAX_AGE_SECONDS_MAX, MAX_AGE_SECONDS_MIN } from "../../domain/rates.ts";
import { CatalogAuthorizationSchema, MoneyString, Nullable, PublicMerchantInfo } from "../schemas.ts";

const Text = (maxLength: number) => Type.String({ minLength: 1, maxLength });

export const FeePercentInput = Type.Union([
  Type.Number({ minimum: 0, maximum: 100 }),
  Type.String({ pattern: "^(0|[1-9][0-9]{0,2})(\\.[0-9]{1,8})?$" }),
]);

/**
 * A web address a merchant's page may show or link to: http(s) only, so that `javascript:`,
 * `data:` and other schemes never reach a page (docs/operator-api.md), and a well-formed URI.
 */
const WebUrl = (maxLength: number) =>
  Type.String({ minLength: 1, maxLength, pattern: "^[Hh][Tt][Tt][Pp][Ss]?://[^\\s]+$", format: "uri" });

export const MerchantFields = {
  email: Type.String({ format: "email", maxLength: 254 }),
  merchantName: Nullable(Text(200)),
  directorName: Nullable(Text(200)),
  website: Nullable(WebUrl(500)),
  logo: Nullable(WebUrl(2000)),
  whitelabeling: Type.Boolean(),
  feePercent: FeePercentInput,
  feesPaidBy: Type.Union([Type.Literal("merchant"), Type.Literal("payer")]),
};

export const CreateMerchantBody = Type.Object(
  {
    email: MerchantFields.email,
    merchantName: Type.Optional(MerchantFields.merchantName),
    directorName: Type.Optional(MerchantFields.directorName),
    website: Type.Optional(MerchantFields.website),
    logo: Type.Optional(MerchantFields.logo),
    whitelabeling: Type.Optional(MerchantFields.whitelabeling),
    feePercent: Type.Optional(MerchantFields.feePercent),
    feesPaidBy: Type.Optional(MerchantFields.feesPaidBy),
  },
  { additionalProperties: false },
);

export const UpdateMerchantBody = Type.Object(
  {
    email: Type.Optional(MerchantFields.email),
    merchantName: Type.Optional(MerchantFields.merchantName),
    directorName: Type.Optional(MerchantFields.directorName),
    website: Type.Optional(MerchantFields.website),
    logo: Type.Optional(MerchantFields.logo),
    whitelabeling: Type.Optional(MerchantFields.whitelabeling),
    feePercent: Type.Optional(MerchantFields.feePercent),
    feesPaidBy: Type.Optional(MerchantFields.feesPaidBy),
    status: Type.Optional(Type.Union([Type.Literal("active"), Type.Literal("suspended")])),
  },
  { additionalProperties: false, minProperties: 1 },
);

/** The merchant as the operator sees it: PublicMerchantInfo plus status and fee plan (product §9). */
export const AdminMerchant = Type.Object(
  {
    ...PublicMerchantInfo.properties,
    status: Type.Union([Type.Literal("active"), Type.Literal("suspended")]),
    feePercent: Type.String({ description: "Plain decimal percent, 0 to 100" }),
    feesPaidBy: Type.Union([Type.Literal("merchant"), Type.Literal("payer")]),
  },
  { additionalProperties: false },
);

export const MerchantIdParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 100 }) });

export const Balance = Type.Object(
  {
    /** The ticker (shared by a currency's networks, product §23). */
    currency: Type.String(),
    /** The catalog entry this balance is in: one row per entry, paid out on its network. */
    internalTicker: Type.String(),
    network: Type.String(),
    available: MoneyString,
  },
  { additionalProperties: false },
);

/** Where a currency's rate comes from (product §22). */
export const RateSourceSchema = Type.Union(
  [
    Type.Object({ kind: Type.Literal("static") }, { additionalProperties: false }),
    Type.Object(
      {
        kind: Type.Literal("chainlink"),
        network: Type.String({ minLength: 1, maxLength: 32, description: "A configured network" }),
        feed: Type.String({ minLength: 1, maxLength: 100, description: "The AggregatorV3Interface feed's address" }),
        maxAgeSeconds: Type.Integer({ minimum: MAX_AGE_SECONDS_MIN, maximum: MAX_AGE_SECONDS_MAX }),
      },
      { additionalProperties: false },
    ),
  ],
  { description: "static (the entry's rateUsd) or a Chainlink feed; absent: static" },
);

export const CurrencyConfiguration = Type.Object(
  {
    ticker: Type.String(),
    type: Type.String(),
    decimals: Type.Integer(),
    networkFee: MoneyString,
    withdrawalMin: MoneyString,
    withdrawalMax: MoneyString,
    rateUsd: Type.String({ description: "The operator's rate: what a static source quotes" }),
    rateSource: RateSourceSchema,
    authorization: CatalogAuthorizationSchema,
    minDeposit: Type.Optional(MoneyString),
    lastRate: Nullable(
      Type.Object(
        {
          rateUsd: Type.String(),
          source: Type.Union([Type.Literal("static"), Type.Literal("chainlink")]),
          updatedAt: Nullable(Type.String({ description: "The feed round's time; null for a static rate" })),
          readAt: Nullable(Type.String({ description: "When a process last read the feed; null for a static rate" })),
        },
        {
          additionalProperties: false,
          description: "The rate a quote takes now (static), or the feed's last reading; null before the first read",
        },
      ),
    ),
  },
  { additionalProperties: false },
);
