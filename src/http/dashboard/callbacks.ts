// The dashboard's callbacks page (product §14): the default callback URL, the callback secret (revealed and rotated after a step-up), a test event; all audited.
import { Type } from "typebox";
import { callbackUrlRefusal } from "../../app/callbackUrlInput.ts";
import type { ServiceContext } from "../../app/context.ts";
import { assert, invariantViolation } from "../../domain/result.ts";
import { TEST_EVENT_TYPE, testEventBody } from "../../domain/testEvent.ts";
import { findCallbackEventWithAttempts, queueCallback } from "../../store/callbacks.ts";
import { newEventId } from "../../store/events.ts";
import {
  findDefaultCallbackUrl,
  readCallbackSecrets,
  rotateCallbackSecret,
  setDefaultCallbackUrl,
} from "../../store/merchants.ts";
import { nowIso } from "../../store/store.ts";
import { adminCallbackEvent, CallbackEventSchema } from "../callbackSchemas.ts";
import { Problem, throwIfRefused } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { HttpUrl, Nullable, problems } from "../schemas.ts";
import { type DashboardScope, requireRole, requireStepUp } from "./session.ts";

const tags = ["dashboard"];
const security = [{ dashboardSession: [] }];

const Secret = Type.Object(
  {
    callbackSecret: Type.String({ description: "Signs every callback (Standard Webhooks, whsec_…)" }),
    rotatedAt: Nullable(Type.String({ description: "When the secret was last rotated" })),
  },
  { additionalProperties: false },
);

const Settings = Type.Object(
  {
    defaultCallbackUrl: Nullable(Type.String({ description: "Where withdrawal, refund and test events go" })),
    secretRotatedAt: Nullable(Type.String()),
  },
  { additionalProperties: false },
);

function merchantGone(): Error {
  return invariantViolation("a dashboard user's merchant exists");
}

/** The merchant's callback settings as the dashboard shows them: the default URL and when the secret was rotated. */
async function settingsOf(ctx: ServiceContext, merchantId: string) {
  const [url, secrets] = await Promise.all([
    findDefaultCallbackUrl(ctx.store, merchantId),
    readCallbackSecrets(ctx.store, ctx.box, merchantId),
  ]);
  if (url === undefined || !secrets) throw merchantGone();
  return { defaultCallbackUrl: url, secretRotatedAt: secrets.rotatedAt };
}

export function registerDashboardCallbacks(api: App, ctx: ServiceContext, scope: DashboardScope): void {
  registerDashboardCallbackSettings(api, ctx, scope);
  registerDashboardSetDefaultCallbackUrl(api, ctx, scope);
  registerDashboardRevealCallbackSecret(api, ctx, scope);
  registerDashboardRotateCallbackSecret(api, ctx, scope);
  registerDashboardSendTestEvent(api, ctx, scope);
}

function registerDashboardCallbackSettings(api: App, ctx: ServiceContext, { session }: DashboardScope): void {
  api.get(
    "/callbacks",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardCallbackSettings",
        tags,
        security,
        summary: "The default callback URL and when the callback secret was last rotated (never the secret)",
        response: { 200: Settings, ...problems(401) },
      },
    },
    async (request) => settingsOf(ctx, requireRole(request, "read").user.merchantId),
  );
}

function registerDashboardSetDefaultCallbackUrl(
  api: App,
  ctx: ServiceContext,
  { session, record }: DashboardScope,
): void {
  api.put(
    "/callbacks/url",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardSetDefaultCallbackUrl",
        tags,
        security,
        summary: "Sets (or with null clears) the default callback URL, checked like an invoice's callbackUrl (audited)",
        body: Type.Object({ callbackUrl: Nullable(HttpUrl) }, { additionalProperties: false }),
        response: { 200: Settings, ...problems(400, 401, 403, 415) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "manageCallbacks");
      const { callbackUrl } = request.body;
      if (callbackUrl !== null)
        throwIfRefused(await callbackUrlRefusal(callbackUrl, ctx.config.serviceMode, "/callbackUrl"));
      await ctx.store.transaction(async (tx) => {
        if (!(await setDefaultCallbackUrl(tx, user.merchantId, callbackUrl, nowIso()))) throw merchantGone();
        await record(request, tx, "callback_url.set", callbackUrl);
      });
      return settingsOf(ctx, user.merchantId);
    },
  );
}

function registerDashboardRevealCallbackSecret(
  api: App,
  ctx: ServiceContext,
  { session, record }: DashboardScope,
): void {
  api.post(
    "/callbacks/secret/reveal",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardRevealCallbackSecret",
        tags,
        security,
        summary: "The callback secret (owners and developers; needs a step-up; audited)",
        response: { 200: Secret, ...problems(401, 403) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "manageCallbacks");
      requireStepUp(request);
      return ctx.store.transaction(async (tx) => {
        const secrets = await readCallbackSecrets(tx, ctx.box, user.merchantId);
        if (!secrets) throw merchantGone();
        await record(request, tx, "callback_secret.reveal", null);
        return { callbackSecret: secrets.current, rotatedAt: secrets.rotatedAt };
      });
    },
  );
}

function registerDashboardRotateCallbackSecret(
  api: App,
  ctx: ServiceContext,
  { session, record }: DashboardScope,
): void {
  api.post(
    "/callbacks/secret/rotate",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardRotateCallbackSecret",
        tags,
        security,
        summary: "A new callback secret; the previous one also signs for 24 hours (needs a step-up; audited)",
        response: { 200: Secret, ...problems(401, 403) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "manageCallbacks");
      requireStepUp(request);
      const now = nowIso();
      return ctx.store.transaction(async (tx) => {
        const secret = await rotateCallbackSecret(tx, ctx.box, user.merchantId, now);
        if (secret === null) throw merchantGone();
        await record(request, tx, "callback_secret.rotate", null);
        return { callbackSecret: secret, rotatedAt: now };
      });
    },
  );
}

function registerDashboardSendTestEvent(api: App, ctx: ServiceContext, { session, record }: DashboardScope): void {
  api.post(
    "/callbacks/test",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardSendTestEvent",
        tags,
        security,
        summary:
          "Sends a signed callback.test event to the default callback URL, delivered, retried and recorded like any callback (audited)",
        response: { 200: CallbackEventSchema, ...problems(401, 403, 409) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "manageCallbacks");
      const event = await ctx.store.transaction(async (tx) => {
        const url = await findDefaultCallbackUrl(tx, user.merchantId);
        if (url === undefined) throw merchantGone();
        if (url === null)
          throw new Problem("default_callback_url_missing", "Set a default callback URL first; test events go there.");
        const id = newEventId();
        const now = nowIso();
        // Not an event of the merchant's business (GET /public/v1/events does not list it): only
        // its delivery is recorded, in the outbox the callback worker sends, signs and retries from.
        // Its own subject, so it never waits behind another subject's undelivered events.
        await queueCallback(
          tx,
          {
            id,
            merchantId: user.merchantId,
            type: TEST_EVENT_TYPE,
            subjectId: id,
            invoiceId: null,
            body: testEventBody(id, user.merchantId, now),
          },
          url,
          now,
        );
        await record(request, tx, "callback.test", id);
        return findCallbackEventWithAttempts(tx, id);
      });
      assert(event, "the queued test event exists");
      return adminCallbackEvent(event);
    },
  );
}
