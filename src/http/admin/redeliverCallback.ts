// Operator API: POST /callbacks/{eventId}/redeliver, makes an event due now with a fresh retry schedule.
import { Type } from "typebox";
import { findCallbackEventWithAttempts, scheduleRedelivery } from "../../store/callbacks.ts";
import { nowIso } from "../../store/store.ts";
import type { App } from "../app.ts";
import type { ServiceContext } from "../context.ts";
import { Problem } from "../problem.ts";
import { problems } from "../schemas.ts";
import { adminCallbackEvent, CallbackEventSchema } from "./callbackSchemas.ts";

export function registerAdminRedeliverCallback(app: App, ctx: ServiceContext): void {
  app.post(
    "/callbacks/:eventId/redeliver",
    {
      schema: {
        operationId: "AdminRedeliverCallback",
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
      const event = await ctx.store.transaction(async (tx) => {
        const scheduled = await scheduleRedelivery(tx, eventId, nowIso());
        if (!scheduled.ok) {
          throw scheduled.error === "callback_event_not_found"
            ? new Problem("callback_event_not_found", "No callback event with this id.")
            : new Problem(
                "callback_delivery_in_progress",
                "An attempt of this event is in flight; redeliver it once that attempt is recorded.",
              );
        }
        return findCallbackEventWithAttempts(tx, eventId);
      });
      if (!event) throw new Problem("callback_event_not_found", "No callback event with this id.");
      return adminCallbackEvent(event);
    },
  );
}
