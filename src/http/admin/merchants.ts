// Operator API: merchants (create, read, update incl. status and fee plan) and their callback secret.
import { Type } from "typebox";
import { callbackUrlRefusal } from "../../app/callbackUrlInput.ts";
import type { ServiceContext } from "../../app/context.ts";
import { formatDecimal, numberToPlainDecimal, parseDecimal } from "../../domain/money.ts";
import {
  emailTaken,
  findMerchant,
  insertMerchant,
  type Merchant,
  readCallbackSecrets,
  rotateCallbackSecret,
  setDefaultCallbackUrl,
  updateMerchant,
} from "../../store/merchants.ts";
import { nowIso } from "../../store/store.ts";
import { Problem, throwIfRefused } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { HttpUrl, Nullable, problems } from "../schemas.ts";
import { AdminMerchant, CreateMerchantBody, MerchantIdParams, UpdateMerchantBody } from "./schemas.ts";

/** Every route here: the operator's bearer token. */
const security = [{ adminToken: [] }];

export const DEFAULT_FEE_PERCENT = "1";

/** A fee percent as a canonical plain decimal from 0 to 100, or a 400. */
export function feePercentOf(input: number | string): string {
  const text = typeof input === "number" ? numberToPlainDecimal(input) : input;
  const value = parseDecimal(text);
  if (value === null || value.scale > 8 || value.units > 100n * 10n ** BigInt(value.scale)) {
    throw new Problem(
      "invalid_fee_percent",
      "feePercent must be a decimal from 0 to 100 with at most 8 fraction digits.",
      [{ pointer: "/feePercent", detail: "must be a decimal from 0 to 100" }],
    );
  }
  return formatDecimal(value);
}

export function adminMerchant(m: Merchant) {
  return {
    id: m.id,
    email: m.email,
    merchantName: m.merchantName,
    directorName: m.directorName,
    website: m.website,
    logo: m.logo,
    whitelabeling: m.whitelabeling,
    status: m.status,
    feePercent: m.feePercent,
    feesPaidBy: m.feesPaidBy,
  };
}

const emailTakenProblem = () => new Problem("email_taken", "Another merchant already uses this email.");
const merchantNotFound = () => new Problem("merchant_not_found", "No merchant with this id.");
const CallbackSecret = Type.Object({ callbackSecret: Type.String() }, { additionalProperties: false });
const DefaultCallbackUrl = Type.Object(
  {
    callbackUrl: Nullable(HttpUrl),
  },
  {
    additionalProperties: false,
    description:
      "Where the merchant's withdrawal and refund events are delivered; null: nowhere (still listed by GET /public/v1/events)",
  },
);

export function registerAdminMerchants(app: App, ctx: ServiceContext): void {
  registerAdminCreateMerchant(app, ctx);
  registerAdminGetMerchant(app, ctx);
  registerAdminUpdateMerchant(app, ctx);
  registerAdminGetCallbackSecret(app, ctx);
  registerAdminRotateCallbackSecret(app, ctx);
  registerDefaultCallbackUrl(app, ctx, security);
}

function registerAdminCreateMerchant(app: App, ctx: ServiceContext): void {
  app.post(
    "/merchants",
    {
      schema: {
        operationId: "AdminCreateMerchant",
        summary: "Create a merchant",
        tags: ["operator"],
        security,
        body: CreateMerchantBody,
        response: { 200: AdminMerchant, ...problems(400, 401, 409, 415) },
      },
    },
    async (request) => {
      const body = request.body;
      const feePercent = body.feePercent === undefined ? DEFAULT_FEE_PERCENT : feePercentOf(body.feePercent);
      const merchant = await ctx.store
        .transaction(async (tx) => {
          if (await emailTaken(tx, body.email)) throw emailTakenProblem();
          return insertMerchant(
            tx,
            ctx.box,
            {
              email: body.email,
              merchantName: body.merchantName ?? null,
              directorName: body.directorName ?? null,
              website: body.website ?? null,
              logo: body.logo ?? null,
              whitelabeling: body.whitelabeling ?? false,
              feePercent,
              feesPaidBy: body.feesPaidBy ?? "merchant",
            },
            nowIso(),
          );
        })
        .catch(rethrowUniqueAsEmailTaken);
      return adminMerchant(merchant);
    },
  );
}

function registerAdminGetMerchant(app: App, ctx: ServiceContext): void {
  app.get(
    "/merchants/:id",
    {
      schema: {
        operationId: "AdminGetMerchant",
        summary: "A merchant",
        tags: ["operator"],
        security,
        params: MerchantIdParams,
        response: { 200: AdminMerchant, ...problems(401, 404) },
      },
    },
    async (request) => {
      const merchant = await findMerchant(ctx.store, request.params.id);
      if (!merchant) throw merchantNotFound();
      return adminMerchant(merchant);
    },
  );
}

function registerAdminUpdateMerchant(app: App, ctx: ServiceContext): void {
  app.patch(
    "/merchants/:id",
    {
      schema: {
        operationId: "AdminUpdateMerchant",
        summary: "Change a merchant's fields or status",
        tags: ["operator"],
        security,
        params: MerchantIdParams,
        body: UpdateMerchantBody,
        response: { 200: AdminMerchant, ...problems(400, 401, 404, 409, 415) },
      },
    },
    async (request) => {
      const { feePercent, ...rest } = request.body;
      const changes = { ...rest, ...(feePercent === undefined ? {} : { feePercent: feePercentOf(feePercent) }) };
      const merchant = await ctx.store
        .transaction(async (tx) => {
          if (changes.email !== undefined && (await emailTaken(tx, changes.email, request.params.id))) {
            throw emailTakenProblem();
          }
          return updateMerchant(tx, request.params.id, changes, nowIso());
        })
        .catch(rethrowUniqueAsEmailTaken);
      if (!merchant) throw merchantNotFound();
      return adminMerchant(merchant);
    },
  );
}

function registerAdminGetCallbackSecret(app: App, ctx: ServiceContext): void {
  app.get(
    "/merchants/:id/callback-secret",
    {
      schema: {
        operationId: "AdminGetCallbackSecret",
        summary: "The merchant's callback signing secret",
        tags: ["operator"],
        security,
        params: MerchantIdParams,
        response: { 200: CallbackSecret, ...problems(401, 404) },
      },
    },
    async (request) => {
      const secrets = await readCallbackSecrets(ctx.store, ctx.box, request.params.id);
      if (!secrets) throw merchantNotFound();
      return { callbackSecret: secrets.current };
    },
  );
}

function registerAdminRotateCallbackSecret(app: App, ctx: ServiceContext): void {
  app.post(
    "/merchants/:id/callback-secret/rotate",
    {
      schema: {
        operationId: "AdminRotateCallbackSecret",
        summary: "Replace the merchant's callback signing secret",
        tags: ["operator"],
        security,
        params: MerchantIdParams,
        response: { 200: CallbackSecret, ...problems(401, 404) },
      },
    },
    async (request) => {
      const secret = await ctx.store.transaction((tx) =>
        rotateCallbackSecret(tx, ctx.box, request.params.id, nowIso()),
      );
      if (secret === null) throw merchantNotFound();
      return { callbackSecret: secret };
    },
  );
}

/** The default callback URL (product §15): its own route, so the contract's merchant object stays as §9 lists it. */
function registerDefaultCallbackUrl(app: App, ctx: ServiceContext, security: { adminToken: never[] }[]): void {
  app.get(
    "/merchants/:id/default-callback-url",
    {
      schema: {
        operationId: "AdminGetDefaultCallbackUrl",
        summary: "The merchant's default callback URL",
        tags: ["operator"],
        security,
        params: MerchantIdParams,
        response: { 200: DefaultCallbackUrl, ...problems(401, 404) },
      },
    },
    async (request) => {
      const merchant = await findMerchant(ctx.store, request.params.id);
      if (!merchant) throw merchantNotFound();
      return { callbackUrl: merchant.defaultCallbackUrl };
    },
  );

  app.put(
    "/merchants/:id/default-callback-url",
    {
      schema: {
        operationId: "AdminSetDefaultCallbackUrl",
        summary: "Set or clear the merchant's default callback URL",
        tags: ["operator"],
        security,
        params: MerchantIdParams,
        body: DefaultCallbackUrl,
        response: { 200: DefaultCallbackUrl, ...problems(400, 401, 404, 415) },
      },
    },
    async (request) => {
      const { callbackUrl } = request.body;
      if (callbackUrl !== null)
        throwIfRefused(await callbackUrlRefusal(callbackUrl, ctx.config.serviceMode, "/callbackUrl"));
      const set = await ctx.store.transaction((tx) =>
        setDefaultCallbackUrl(tx, request.params.id, callbackUrl, nowIso()),
      );
      if (!set) throw merchantNotFound();
      return { callbackUrl };
    },
  );
}

/** Two processes creating the same email at once: the unique index decides, the loser gets a 409. */
function rethrowUniqueAsEmailTaken(error: unknown): never {
  const message = error instanceof Error ? error.message : "";
  if (/unique|duplicate key/i.test(message) && /email/i.test(message)) throw emailTakenProblem();
  throw error;
}
