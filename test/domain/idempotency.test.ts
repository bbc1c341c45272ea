// Safe retries: which recorded request id answers what.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type IncomingRequest, judgeRetry, type RecordedRequest } from "../../src/domain/idempotency.ts";

const ROUTE = "/public/v1/withdrawals/create";
const recorded: RecordedRequest = {
  merchantId: "m1",
  route: ROUTE,
  bodyHash: "h1",
  state: "completed",
  responseStatus: 200,
  responseBody: '{"request":{}}',
};
const same: IncomingRequest = { merchantId: "m1", route: ROUTE, bodyHash: "h1" };

describe("judgeRetry", () => {
  it("replays the recorded response of an identical completed request", () => {
    expect(judgeRetry(recorded, same, false)).toEqual({ kind: "replay", status: 200, body: '{"request":{}}' });
  });

  it("answers 409 codes for another body, another route, a running operation, a reconciliation", () => {
    expect(judgeRetry(recorded, { ...same, bodyHash: "h2" }, false)).toEqual({
      kind: "conflict",
      code: "request_id_reused",
    });
    expect(judgeRetry(recorded, { ...same, route: "/public/v1/refunds/refundFiat" }, false)).toEqual({
      kind: "conflict",
      code: "request_id_reused",
    });
    expect(
      judgeRetry({ ...recorded, state: "running", responseStatus: null, responseBody: null }, same, false),
    ).toEqual({
      kind: "conflict",
      code: "request_in_progress",
    });
    expect(judgeRetry(recorded, same, true)).toEqual({ kind: "conflict", code: "request_needs_reconciliation" });
  });

  it("answers another merchant the same thing whatever that merchant's request was", () => {
    fc.assert(
      fc.property(
        fc.string(),
        fc.string(),
        fc.constantFrom<RecordedRequest["state"]>("running", "completed"),
        fc.boolean(),
        fc.boolean(),
        (route, bodyHash, state, reconciliation, sameBody) => {
          const theirs: RecordedRequest = { ...recorded, route, bodyHash, state };
          const mine: IncomingRequest = {
            merchantId: "m2",
            route: sameBody ? route : ROUTE,
            bodyHash: sameBody ? bodyHash : "x",
          };
          expect(judgeRetry(theirs, mine, reconciliation)).toEqual({
            kind: "conflict",
            code: "request_id_unavailable",
          });
        },
      ),
    );
  });
});
