// Operator API: the velocity cap of a network's hot wallet (product §31): the USD its payouts may carry out per rolling 24 hours.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { setVelocityCap, velocityCapOf } from "../../app/velocityCaps.ts";
import { valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";

const security = [{ adminToken: [] }];

const Params = Type.Object({ network: Type.String({ minLength: 1, maxLength: 32 }) }, { additionalProperties: false });

const VelocityCap = Type.Object(
  {
    network: Type.String(),
    usdPer24Hours: Type.Union([Type.String(), Type.Null()], {
      description: "USD the network's hot-wallet payouts may carry out per rolling 24 hours; null: no cap",
    }),
    spentUsdLast24Hours: Type.String({
      description: "USD of the network's payouts signed in the last 24 hours, at the live rates they were signed at",
    }),
    waitingPayouts: Type.Integer({
      description: "Queued payouts the cap holds back now (processor status awaiting_velocity_cap)",
    }),
  },
  { additionalProperties: false },
);

const Body = Type.Object(
  {
    usdPer24Hours: Type.Union([Type.String({ minLength: 1, maxLength: 40 }), Type.Null()], {
      description: 'A positive USD amount with at most cents ("25000", "25000.50"); null removes the cap',
    }),
  },
  { additionalProperties: false },
);

export function registerAdminVelocityCaps(app: App, ctx: ServiceContext): void {
  app.get(
    "/networks/:network/velocity-cap",
    {
      schema: {
        operationId: "AdminGetVelocityCap",
        tags: ["operator"],
        summary: "A network's velocity cap, what its payouts of the last 24 hours spent, and the payouts it holds back",
        security,
        params: Params,
        response: { 200: VelocityCap, ...problems(401, 404) },
      },
    },
    async (request) => valueOrProblem(await velocityCapOf(ctx, request.params.network)),
  );
  app.put(
    "/networks/:network/velocity-cap",
    {
      schema: {
        operationId: "AdminSetVelocityCap",
        tags: ["operator"],
        summary:
          "Set (or with null remove) a network's velocity cap: a payout that would take the last 24 hours' payouts over it waits queued, and those behind it",
        security,
        params: Params,
        body: Body,
        response: { 200: VelocityCap, ...problems(400, 401, 404, 415) },
      },
    },
    async (request) => {
      const view = valueOrProblem(await setVelocityCap(ctx, request.params.network, request.body.usdPer24Hours));
      request.log.info(
        { network: view.network, usdPer24Hours: view.usdPer24Hours },
        "velocity cap set by the operator",
      );
      return view;
    },
  );
}
