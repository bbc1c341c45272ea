// The dashboard's test event body: the shape of every event, its type, and the time format.
import { describe, expect, it } from "vitest";
import { TEST_EVENT_TYPE, testEventBody } from "../../src/domain/testEvent.ts";

describe("testEventBody", () => {
  it("is an event like the others: type, id, created_at, data", () => {
    const body = testEventBody("evt_1", "m-1", "2026-11-24T21:00:00.000Z");
    expect(JSON.parse(body)).toEqual({
      type: TEST_EVENT_TYPE,
      id: "evt_1",
      created_at: "2026-11-24T21:00:00.000Z",
      data: { merchant_id: "m-1", message: "A test event sent from the dashboard." },
    });
    expect(Object.keys(JSON.parse(body))).toEqual(["type", "id", "created_at", "data"]);
  });

  it("refuses a time that is not RFC 3339 UTC with milliseconds", () => {
    expect(() => testEventBody("evt_1", "m-1", "2026-11-24T21:00:00Z")).toThrow(/invariant/);
  });
});
