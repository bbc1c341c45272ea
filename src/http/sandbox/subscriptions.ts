// The sandbox's test clocks (product §29): run a subscription's schedule up to a time, as Stripe's test clocks do.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { advanceTestClock } from "../../app/subscriptions.ts";
import { merchantAuth, ownerOf } from "../auth.ts";
import { Problem, valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";
import { Subscription, SubscriptionIdParams } from "../subscriptionShapes.ts";

const AdvanceBody = Type.Object(
  { to: Type.String({ minLength: 1, maxLength: 64, description: "RFC 3339: the subscription's new time" }) },
  { additionalProperties: false },
);

export function registerSandboxSubscriptions(app: App, ctx: ServiceContext, prefix: string): void {
  app.post(
    `${prefix}/subscriptions/:id/advance`,
    {
      onRequest: [merchantAuth(ctx)],
      schema: {
        operationId: "SandboxAdvanceSubscription",
        tags: ["sandbox"],
        summary:
          "A test clock: run the subscription's schedule up to `to` (invoices, statuses, events); its time then stays there",
        security: [{ apiKey: [] }],
        params: SubscriptionIdParams,
        body: AdvanceBody,
        response: { 200: Subscription, ...problems(400, 401, 404, 415, 429) },
      },
    },
    async (request) => {
      const input = { id: request.params.id, to: request.body.to };
      const advanced = valueOrProblem(await advanceTestClock(ctx, ownerOf(request).merchantId, input));
      if (!advanced) throw new Problem("subscription_not_found", "No subscription with this id.");
      return advanced;
    },
  );
}
