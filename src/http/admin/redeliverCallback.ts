// Operator API: POST /callbacks/{eventId}/redeliver, makes an event due now with a fresh retry schedule.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { redeliverCallbackEvent } from "../callbackRedelivery.ts";
import { adminCallbackEvent, CallbackEventSchema } from "../callbackSchemas.ts";
import type { App } from "../routeHost.ts";
import { problems } from "../schemas.ts";

export function registerAdminRedeliverCallback(app: App, ctx: ServiceContext): void {
  app.post(
    "/callbacks/:eventId/redeliver",
    {
      schema: {
        operationId: "AdminRedeliverCallback",
        summary: "Deliver a callback event again",
        tags: ["operator"],
        security: [{ adminToken: [] }],
        description:
          "Schedules the event for delivery now, whatever its status (also failed or delivered), with the same id and body and a fresh retry schedule. 409 while an attempt is in flight.",
        params: Type.Object({ eventId: Type.String({ minLength: 1, maxLength: 200 }) }),
        response: { 200: CallbackEventSchema, ...problems(401, 404, 409) },
      },
    },
    async (request) => {
      const { eventId } = request.params;
      const event = await ctx.store.transaction((tx) => redeliverCallbackEvent(tx, eventId, null));
      return adminCallbackEvent(event);
    },
  );
}
