// Subscriptions API (product §29): subscribe a customer (signed), list and read, cancel, and change plan from the next period.
import { type Static, Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import {
  cancelSubscription,
  changeSubscriptionPlan,
  getSubscription,
  listSubscriptions,
  performCreateSubscription,
} from "../../app/subscriptions.ts";
import { merchantAuth, ownerOf } from "../auth.ts";
import { listAnswer, listProblem, listQuery, pageWindow } from "../lists.ts";
import { Problem, valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";
import { answerVerdict, signedOperation, signedRequestOf } from "../signed.ts";
import {
  Subscription,
  SubscriptionBody,
  SubscriptionIdParams,
  SubscriptionStatusSchema,
} from "../subscriptionShapes.ts";
import { EXTENSIONS_TAG } from "./extensions.ts";

export const CREATE_SUBSCRIPTION_PATH = "/public/v1/subscriptions";
const tags = [EXTENSIONS_TAG];
const security = [{ apiKey: [] }];
const notFound = () => new Problem("subscription_not_found", "No subscription with this id.");
const CancelBody = Type.Object(
  { atPeriodEnd: Type.Optional(Type.Boolean({ description: "Default false: cancel now" })) },
  { additionalProperties: false },
);
const ChangePlanBody = Type.Object(
  { planId: Type.String({ minLength: 1, maxLength: 100 }) },
  { additionalProperties: false },
);

export function registerSubscriptions(app: App, ctx: ServiceContext): void {
  const auth = merchantAuth(ctx);
  app.post(
    CREATE_SUBSCRIPTION_PATH,
    {
      ...signedOperation(ctx, CREATE_SUBSCRIPTION_PATH),
      schema: {
        operationId: "CreateSubscription",
        tags,
        summary: "Subscribe a customer to a plan (signed): trialing, or incomplete with its first invoice",
        description:
          "Needs x-api-key, x-service-timestamp, x-service-request-id and x-service-request-signature; see docs/signed-operations.md.",
        security,
        body: SubscriptionBody,
        response: { 200: Subscription, ...problems(400, 401, 403, 409, 413, 415, 429) },
      },
    },
    async (request, reply) =>
      answerVerdict(
        reply,
        valueOrProblem(await performCreateSubscription(ctx, signedRequestOf(request), request.body)),
      ),
  );
  registerReads(app, ctx, auth);
  registerChanges(app, ctx, auth);
}

function registerReads(app: App, ctx: ServiceContext, auth: ReturnType<typeof merchantAuth>): void {
  const ListQuery = listQuery(
    {
      status: Type.Optional(SubscriptionStatusSchema),
      planId: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
      customer: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: "The customer's reference" })),
    },
    "a subscription",
  );
  app.get(
    "/public/v1/subscriptions",
    {
      onRequest: [auth],
      schema: {
        operationId: "ListSubscriptions",
        tags,
        summary: "This merchant's subscriptions, newest first; by status, plan or customer",
        security,
        querystring: ListQuery,
        response: { 200: listAnswer(Subscription, "A page of subscriptions"), ...problems(400, 401, 429) },
      },
    },
    async (request) => {
      const query: Static<typeof ListQuery> = request.query;
      const filter = { ...pageWindow(query), status: query.status, planId: query.planId, customer: query.customer };
      const page = await listSubscriptions(ctx, ownerOf(request).merchantId, filter);
      if (!page.ok) throw listProblem(page.error, page.detail);
      return { data: page.value.data, has_more: page.value.hasMore };
    },
  );
  app.get(
    "/public/v1/subscriptions/:id",
    {
      onRequest: [auth],
      schema: {
        operationId: "GetSubscription",
        tags,
        summary: "A subscription of this merchant",
        security,
        params: SubscriptionIdParams,
        response: { 200: Subscription, ...problems(400, 401, 404, 429) },
      },
    },
    async (request) => {
      const subscription = await getSubscription(ctx, ownerOf(request).merchantId, request.params.id);
      if (!subscription) throw notFound();
      return subscription;
    },
  );
}

function registerChanges(app: App, ctx: ServiceContext, auth: ReturnType<typeof merchantAuth>): void {
  app.post(
    "/public/v1/subscriptions/:id/cancel",
    {
      onRequest: [auth],
      schema: {
        operationId: "CancelSubscription",
        tags,
        summary: "Cancel now (the open invoice closed) or at the current period's end",
        security,
        params: SubscriptionIdParams,
        body: CancelBody,
        response: { 200: Subscription, ...problems(400, 401, 404, 409, 429) },
      },
    },
    async (request) => {
      const input = { id: request.params.id, atPeriodEnd: request.body.atPeriodEnd === true };
      const canceled = valueOrProblem(await cancelSubscription(ctx, ownerOf(request).merchantId, input));
      if (!canceled) throw notFound();
      return canceled;
    },
  );
  app.post(
    "/public/v1/subscriptions/:id/change-plan",
    {
      onRequest: [auth],
      schema: {
        operationId: "ChangeSubscriptionPlan",
        tags,
        summary: "Change the plan from the next period on (the period after, when its invoice is already made)",
        security,
        params: SubscriptionIdParams,
        body: ChangePlanBody,
        response: { 200: Subscription, ...problems(400, 401, 404, 409, 429) },
      },
    },
    async (request) => {
      const input = { id: request.params.id, planId: request.body.planId };
      const changed = valueOrProblem(await changeSubscriptionPlan(ctx, ownerOf(request).merchantId, input));
      if (!changed) throw notFound();
      return changed;
    },
  );
}
