// verifyCallback accepts what the standardwebhooks package signs, with rotation and tolerance, and refuses everything else.
import { randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { CallbackVerificationError, verifyCallback } from "../../src/index.ts";

const newSecret = () => `whsec_${randomBytes(24).toString("base64")}`;
const event = {
  type: "invoice.completed",
  id: "evt_5b0f8a3c9d2e4f61a7b8c9d0e1f2a3b4",
  created_at: "2026-03-01T12:07:42.000Z",
  data: { invoice: { id: "inv_1", status: "completed" } },
};
const body = JSON.stringify(event);

function signed(secret: string, at = new Date(), payload = body) {
  const signature = new Webhook(secret).sign(event.id, at, payload);
  return {
    "webhook-id": event.id,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1000)),
    "webhook-signature": signature,
  };
}

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (error) {
    expect(error).toBeInstanceOf(CallbackVerificationError);
    return (error as CallbackVerificationError).code;
  }
}

describe("verifyCallback", () => {
  it("returns the event of a callback the standardwebhooks package signed (string, bytes, Headers)", () => {
    const secret = newSecret();
    const headers = signed(secret);
    expect(verifyCallback(body, headers, secret)).toEqual(event);
    expect(verifyCallback(Buffer.from(body), headers, secret)).toEqual(event);
    expect(verifyCallback(body, new Headers(headers), secret)).toEqual(event);
  });

  it("accepts the documented example of docs/callbacks.md (a signature checked with openssl)", () => {
    const headers = {
      "webhook-id": "evt_5b0f8a3c9d2e4f61a7b8c9d0e1f2a3b4",
      "webhook-timestamp": "1772366862",
      "webhook-signature": "v1,OeKFR2LMpvGB3CtzTJByXvpCII1QANXnJL+1IVeNld4=",
    };
    const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    // Signed by the standardwebhooks package with the same inputs, so the two implementations agree.
    const libraryHeaders = signed(secret, new Date(1772366862_000));
    expect(libraryHeaders["webhook-timestamp"]).toBe(headers["webhook-timestamp"]);
    expect(verifyCallback(body, libraryHeaders, secret, { now: new Date(1772366862_000) })).toEqual(event);
  });

  it("accepts any of several secrets (rotation), and either of two signatures in the header", () => {
    const [oldSecret, newer, unrelated] = [newSecret(), newSecret(), newSecret()];
    expect(verifyCallback(body, signed(oldSecret), [newer, oldSecret])).toEqual(event);
    const both = {
      ...signed(newer),
      "webhook-signature": `${signed(unrelated)["webhook-signature"]} ${signed(newer)["webhook-signature"]}`,
    };
    expect(verifyCallback(body, both, newer)).toEqual(event);
    expect(codeOf(() => verifyCallback(body, signed(oldSecret), [newer, unrelated]))).toBe("invalid_signature");
  });

  it("refuses a changed body, a changed id or timestamp, and missing headers", () => {
    const secret = newSecret();
    const headers = signed(secret);
    expect(codeOf(() => verifyCallback(body.replace("completed", "refunded"), headers, secret))).toBe(
      "invalid_signature",
    );
    expect(codeOf(() => verifyCallback(body, { ...headers, "webhook-id": "evt_other" }, secret))).toBe(
      "invalid_signature",
    );
    const shifted = String(Number(headers["webhook-timestamp"]) - 1);
    expect(codeOf(() => verifyCallback(body, { ...headers, "webhook-timestamp": shifted }, secret))).toBe(
      "invalid_signature",
    );
    expect(codeOf(() => verifyCallback(body, { "webhook-id": event.id }, secret))).toBe("missing_headers");
  });

  it("refuses a timestamp outside the tolerance, either side, and accepts one inside it", () => {
    const secret = newSecret();
    const old = signed(secret, new Date(Date.now() - 600_000));
    expect(codeOf(() => verifyCallback(body, old, secret))).toBe("timestamp_out_of_tolerance");
    expect(verifyCallback(body, old, secret, { toleranceSeconds: 700 })).toEqual(event);
    const future = signed(secret, new Date(Date.now() + 600_000));
    expect(codeOf(() => verifyCallback(body, future, secret))).toBe("timestamp_out_of_tolerance");
    expect(
      codeOf(() =>
        verifyCallback(body, signed(secret), secret, { toleranceSeconds: 0, now: new Date(Date.now() + 5_000) }),
      ),
    ).toBe("timestamp_out_of_tolerance");
  });

  it("refuses a correctly signed body that is not an event for this webhook-id", () => {
    const secret = newSecret();
    const payload = JSON.stringify({ ...event, id: "evt_elsewhere" });
    expect(codeOf(() => verifyCallback(payload, signed(secret, new Date(), payload), secret))).toBe("invalid_body");
  });
});
