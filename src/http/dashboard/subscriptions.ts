// The dashboard's plans and subscriptions (product §29): the merchant API's objects behind a session: list and create plans, retire them, list subscriptions and cancel them; changes are audited.
import { type Static, Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { createPlan, listPlans, setPlanActive } from "../../app/plans.ts";
import { cancelSubscription, listSubscriptions } from "../../app/subscriptions.ts";
import { listAnswer, listProblem, listQuery, pageWindow } from "../lists.ts";
import { Problem, valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";
import { Plan, PlanBody, Subscription, SubscriptionIdParams, SubscriptionStatusSchema } from "../subscriptionShapes.ts";
import { type DashboardScope, requireRole } from "./session.ts";

const tags = ["dashboard"];
const security = [{ dashboardSession: [] }];
const CancelBody = Type.Object(
  { atPeriodEnd: Type.Boolean({ description: "true: at the current period's end; false: now" }) },
  { additionalProperties: false },
);

export function registerDashboardSubscriptions(api: App, ctx: ServiceContext, scope: DashboardScope) {
  registerDashboardListPlans(api, ctx, scope);
  registerDashboardCreatePlan(api, ctx, scope);
  registerDashboardUpdatePlan(api, ctx, scope);
  registerDashboardListSubscriptions(api, ctx, scope);
  registerDashboardCancelSubscription(api, ctx, scope);
}

function registerDashboardListPlans(api: App, ctx: ServiceContext, { session }: DashboardScope): void {
  const ListQuery = listQuery({}, "a plan");
  api.get(
    "/plans",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardListPlans",
        tags,
        security,
        summary: "The merchant's plans, newest first",
        querystring: ListQuery,
        response: { 200: listAnswer(Plan, "A page of plans"), ...problems(400, 401) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "read");
      const query: Static<typeof ListQuery> = request.query;
      const page = await listPlans(ctx, user.merchantId, pageWindow(query));
      if (!page.ok) throw listProblem(page.error, page.detail);
      return { data: page.value.data, has_more: page.value.hasMore };
    },
  );
}

function registerDashboardCreatePlan(api: App, ctx: ServiceContext, { session, record }: DashboardScope): void {
  api.post(
    "/plans",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardCreatePlan",
        tags,
        security,
        summary: "Creates a plan (POST /public/v1/plans's body and rules)",
        body: PlanBody,
        response: { 200: Plan, ...problems(400, 401, 403, 415) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "manageInvoices");
      const created = await createPlan(ctx, user.merchantId, request.body, (tx, plan) =>
        record(request, tx, "plan.create", plan.id),
      );
      return valueOrProblem(created);
    },
  );
}

function registerDashboardUpdatePlan(api: App, ctx: ServiceContext, { session, record }: DashboardScope): void {
  api.patch(
    "/plans/:id",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardUpdatePlan",
        tags,
        security,
        summary: "Retires (active: false) or reactivates a plan; its subscriptions continue either way",
        params: SubscriptionIdParams,
        body: Type.Object({ active: Type.Boolean() }, { additionalProperties: false }),
        response: { 200: Plan, ...problems(400, 401, 403, 404, 415) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "manageInvoices");
      const { active } = request.body;
      const plan = await setPlanActive(ctx, user.merchantId, request.params.id, active, (tx) =>
        record(request, tx, active ? "plan.activate" : "plan.retire", request.params.id),
      );
      if (!plan) throw new Problem("plan_not_found", "No plan with this id.");
      return plan;
    },
  );
}

function registerDashboardListSubscriptions(api: App, ctx: ServiceContext, { session }: DashboardScope): void {
  const ListQuery = listQuery(
    {
      status: Type.Optional(SubscriptionStatusSchema),
      planId: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
      customer: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: "The customer's reference" })),
    },
    "a subscription",
  );
  api.get(
    "/subscriptions",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardListSubscriptions",
        tags,
        security,
        summary: "The merchant's subscriptions, newest first; by status, plan or customer",
        querystring: ListQuery,
        response: { 200: listAnswer(Subscription, "A page of subscriptions"), ...problems(400, 401) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "read");
      const query: Static<typeof ListQuery> = request.query;
      const filter = { ...pageWindow(query), status: query.status, planId: query.planId, customer: query.customer };
      const page = await listSubscriptions(ctx, user.merchantId, filter);
      if (!page.ok) throw listProblem(page.error, page.detail);
      return { data: page.value.data, has_more: page.value.hasMore };
    },
  );
}

function registerDashboardCancelSubscription(api: App, ctx: ServiceContext, { session, record }: DashboardScope): void {
  api.post(
    "/subscriptions/:id/cancel",
    {
      onRequest: session,
      schema: {
        operationId: "DashboardCancelSubscription",
        tags,
        security,
        summary: "Cancels a subscription now (its open invoice closed) or at its current period's end",
        params: SubscriptionIdParams,
        body: CancelBody,
        response: { 200: Subscription, ...problems(400, 401, 403, 404, 409, 415) },
      },
    },
    async (request) => {
      const { user } = requireRole(request, "manageInvoices");
      const input = { id: request.params.id, atPeriodEnd: request.body.atPeriodEnd };
      const action = input.atPeriodEnd ? "subscription.cancel_at_period_end" : "subscription.cancel";
      const canceled = valueOrProblem(
        await cancelSubscription(ctx, user.merchantId, input, (tx) => record(request, tx, action, input.id)),
      );
      if (!canceled) throw new Problem("subscription_not_found", "No subscription with this id.");
      return canceled;
    },
  );
}
