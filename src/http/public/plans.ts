// Plans API (product §29): create, list, read and retire the plans a merchant's customers subscribe to; each handler parses, calls one use case and answers.
import { type Static, Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { createPlan, getPlan, listPlans, setPlanActive } from "../../app/plans.ts";
import { merchantAuth, ownerOf } from "../auth.ts";
import { listAnswer, listProblem, listQuery, pageWindow } from "../lists.ts";
import { Problem, valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";
import { Plan, PlanBody, SubscriptionIdParams } from "../subscriptionShapes.ts";

import { EXTENSIONS_TAG } from "./extensions.ts";

const tags = [EXTENSIONS_TAG];
const security = [{ apiKey: [] }];
const PatchBody = Type.Object({ active: Type.Boolean() }, { additionalProperties: false });
const notFound = () => new Problem("plan_not_found", "No plan with this id.");

export function registerPlans(app: App, ctx: ServiceContext): void {
  const auth = merchantAuth(ctx);
  app.post(
    "/public/v1/plans",
    {
      onRequest: [auth],
      schema: {
        operationId: "CreatePlan",
        tags,
        summary: "Create a plan: a price per period (day, week, month or year), with a trial and a grace",
        security,
        body: PlanBody,
        response: { 200: Plan, ...problems(400, 401, 429) },
      },
    },
    async (request) => valueOrProblem(await createPlan(ctx, ownerOf(request).merchantId, request.body)),
  );
  registerPlanReads(app, ctx, auth);
  registerUpdatePlan(app, ctx, auth);
}

function registerPlanReads(app: App, ctx: ServiceContext, auth: ReturnType<typeof merchantAuth>): void {
  const ListQuery = listQuery({}, "a plan");
  app.get(
    "/public/v1/plans",
    {
      onRequest: [auth],
      schema: {
        operationId: "ListPlans",
        tags,
        summary: "This merchant's plans, newest first",
        security,
        querystring: ListQuery,
        response: { 200: listAnswer(Plan, "A page of plans"), ...problems(400, 401, 429) },
      },
    },
    async (request) => {
      const query: Static<typeof ListQuery> = request.query;
      const page = await listPlans(ctx, ownerOf(request).merchantId, pageWindow(query));
      if (!page.ok) throw listProblem(page.error, page.detail);
      return { data: page.value.data, has_more: page.value.hasMore };
    },
  );
  app.get(
    "/public/v1/plans/:id",
    {
      onRequest: [auth],
      schema: {
        operationId: "GetPlan",
        tags,
        summary: "A plan of this merchant",
        security,
        params: SubscriptionIdParams,
        response: { 200: Plan, ...problems(400, 401, 404, 429) },
      },
    },
    async (request) => {
      const plan = await getPlan(ctx, ownerOf(request).merchantId, request.params.id);
      if (!plan) throw notFound();
      return plan;
    },
  );
}

function registerUpdatePlan(app: App, ctx: ServiceContext, auth: ReturnType<typeof merchantAuth>): void {
  app.patch(
    "/public/v1/plans/:id",
    {
      onRequest: [auth],
      schema: {
        operationId: "UpdatePlan",
        tags,
        summary: "Retire (active: false) or reactivate a plan; its subscriptions continue either way",
        security,
        params: SubscriptionIdParams,
        body: PatchBody,
        response: { 200: Plan, ...problems(400, 401, 404, 429) },
      },
    },
    async (request) => {
      const plan = await setPlanActive(ctx, ownerOf(request).merchantId, request.params.id, request.body.active);
      if (!plan) throw notFound();
      return plan;
    },
  );
}
