// Redelivering a callback event: one rule for the operator API and the merchant's dashboard (which may only touch its own events).
import {
  type CallbackEventWithAttempts,
  findCallbackEvent,
  findCallbackEventWithAttempts,
  scheduleRedelivery,
} from "../store/callbacks.ts";
import { nowIso, type Tx } from "../store/store.ts";
import { Problem } from "./problem.ts";

function notFound(): Problem {
  return new Problem("callback_event_not_found", "No callback event with this id.");
}

/**
 * Makes the event due now with a fresh retry schedule and answers it with its attempts. With a
 * merchant id, another merchant's event is not found (404, never 403: its id reveals nothing).
 */
export async function redeliverCallbackEvent(
  tx: Tx,
  eventId: string,
  merchantId: string | null,
): Promise<CallbackEventWithAttempts> {
  if (merchantId !== null && (await findCallbackEvent(tx, eventId))?.merchantId !== merchantId) throw notFound();
  const scheduled = await scheduleRedelivery(tx, eventId, nowIso());
  if (!scheduled.ok) {
    throw scheduled.error === "callback_event_not_found"
      ? notFound()
      : new Problem(
          "callback_delivery_in_progress",
          "An attempt of this event is in flight; redeliver it once that attempt is recorded.",
        );
  }
  const event = await findCallbackEventWithAttempts(tx, eventId);
  if (!event) throw notFound();
  return event;
}
