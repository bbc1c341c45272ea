// Callback signatures agree with the Standard Webhooks reference library, and rotation signs with both secrets for 24 hours.
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { callbackEventBody } from "../../src/domain/callbackEvent.ts";
import {
  CALLBACK_ROTATION_OVERLAP_MS,
  callbackSignatureHeader,
  callbackSigningKey,
  signCallback,
  signingSecrets,
} from "../../src/domain/callbackSignature.ts";

// The example secret of the Standard Webhooks specification.
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const OTHER = "whsec_c2VjcmV0LW51bWJlci10d28tZm9yLXRlc3Rz";
const ID = "msg_p5jXN8AQM9LWM0D4loKWxJek";
const TIMESTAMP = 1614265330;
const BODY = '{"test": 2432232314}';

describe("signCallback", () => {
  it("matches the specification's example signature", () => {
    expect(signCallback(SECRET, ID, TIMESTAMP, BODY)).toBe("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
  });

  it("matches the reference library for any body, and verifies there", () => {
    const now = Math.floor(Date.now() / 1000);
    for (const body of [BODY, '{"a":"é€😀"}', "", JSON.stringify({ long: "x".repeat(5000) })]) {
      expect(signCallback(OTHER, "evt_1", now, body)).toBe(
        new Webhook(OTHER).sign("evt_1", new Date(now * 1000), body),
      );
      const headers = {
        "webhook-id": "evt_1",
        "webhook-timestamp": String(now),
        "webhook-signature": signCallback(OTHER, "evt_1", now, body),
      };
      expect(() => new Webhook(OTHER).verify(body, headers)).not.toThrow();
      expect(() => new Webhook(SECRET).verify(body, headers)).toThrow();
    }
  });

  it("gives the worked example of docs/callbacks.md", () => {
    const id = "evt_5b0f8a3c9d2e4f61a7b8c9d0e1f2a3b4";
    const body = callbackEventBody(
      id,
      {
        id: "3f1c1a9e-6a7b-4c55-9d59-0c6f3f0f2b11",
        created_at: "2026-03-01T12:00:00.000Z",
        updated_at: "2026-03-01T12:07:42.512Z",
        expires_at: "2026-03-01T13:00:00.000Z",
        invoice_url: "https://pay.example.com/pay/3f1c1a9e-6a7b-4c55-9d59-0c6f3f0f2b11",
        api_source: null,
        type: "b2c",
        status: "completed",
        merchant_id: "8d0e2f4a-1b3c-4d5e-8f70-9a1b2c3d4e5f",
        settlement_currency: "USDT",
        currency: "USDT",
        convert_currency: null,
        amount: "100",
        final_amount: "100",
        merchant_fee: "1",
        network_and_other_fees: "1",
        merchant_receive_amount: "98",
        paid_amount: "100",
        callback_url: "https://shop.example.com/payments/callback",
        success_url: null,
        return_url: null,
        fail_url: null,
        order_no: "A-1001",
        description: "Order A-1001",
      },
      "2026-03-01T12:07:42.512Z",
    );
    expect(signCallback(SECRET, id, 1772366862, body)).toBe("v1,OeKFR2LMpvGB3CtzTJByXvpCII1QANXnJL+1IVeNld4=");
  });

  it("changes with every signed part", () => {
    const base = signCallback(SECRET, ID, TIMESTAMP, BODY);
    expect(signCallback(SECRET, "msg_other", TIMESTAMP, BODY)).not.toBe(base);
    expect(signCallback(SECRET, ID, TIMESTAMP + 1, BODY)).not.toBe(base);
    expect(signCallback(SECRET, ID, TIMESTAMP, `${BODY} `)).not.toBe(base);
    expect(signCallback(OTHER, ID, TIMESTAMP, BODY)).not.toBe(base);
  });

  it("derives the key by base64-decoding what follows whsec_", () => {
    expect(callbackSigningKey(SECRET)).toEqual(Buffer.from("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "base64"));
    expect(() => callbackSigningKey("whsec_")).toThrow(/invariant violated/);
    expect(() => callbackSigningKey("whsec_not base64!")).toThrow(/invariant violated/);
  });
});

describe("callbackSignatureHeader", () => {
  it("lists one signature per secret, space-separated, each verifiable on its own", () => {
    const now = Math.floor(Date.now() / 1000);
    const header = callbackSignatureHeader([OTHER, SECRET], ID, now, BODY);
    const parts = header.split(" ");
    expect(parts).toEqual([signCallback(OTHER, ID, now, BODY), signCallback(SECRET, ID, now, BODY)]);
    for (const secret of [OTHER, SECRET]) {
      expect(
        new Webhook(secret).verify(BODY, {
          "webhook-id": ID,
          "webhook-timestamp": String(now),
          "webhook-signature": header,
        }),
      ).toEqual({ test: 2432232314 });
    }
  });
});

describe("signingSecrets", () => {
  const rotatedAt = "2026-01-01T00:00:00.000Z";
  const at = (ms: number) => new Date(Date.parse(rotatedAt) + ms);

  it("signs with the current secret only when it was never rotated", () => {
    expect(signingSecrets({ current: "new", previous: null, rotatedAt: null }, at(0))).toEqual(["new"]);
  });

  it("adds the previous secret for 24 hours after a rotation, the current one first", () => {
    const secrets = { current: "new", previous: "old", rotatedAt };
    expect(signingSecrets(secrets, at(0))).toEqual(["new", "old"]);
    expect(signingSecrets(secrets, at(CALLBACK_ROTATION_OVERLAP_MS - 1))).toEqual(["new", "old"]);
    expect(signingSecrets(secrets, at(CALLBACK_ROTATION_OVERLAP_MS))).toEqual(["new"]);
    expect(CALLBACK_ROTATION_OVERLAP_MS).toBe(24 * 3600_000);
  });
});
