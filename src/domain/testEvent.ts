// The dashboard's test event: a callback that proves the merchant's endpoint receives and verifies signed events.
import { assert } from "./result.ts";

export const TEST_EVENT_TYPE = "callback.test";

/**
 * Its body, serialized once like every event's (`{ type, id, created_at, data }`); `data` names the
 * merchant and says what it is, so an endpoint can acknowledge it without acting on it.
 */
export function testEventBody(id: string, merchantId: string, createdAt: string): string {
  assert(
    /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(createdAt),
    "created_at is RFC 3339 UTC with milliseconds",
  );
  return JSON.stringify({
    type: TEST_EVENT_TYPE,
    id,
    created_at: createdAt,
    data: { merchant_id: merchantId, message: "A test event sent from the dashboard." },
  });
}
