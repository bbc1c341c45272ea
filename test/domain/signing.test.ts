// Header formats, the signed message and the HMAC of interface "Request signing", including the worked example of docs/signed-operations.md.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  bodyHash,
  canonicalJson,
  checkRequestId,
  checkSignatureFormat,
  checkTimestamp,
  signatureMatches,
  signatureOf,
  signingMessage,
  TIMESTAMP_TOLERANCE_SECONDS,
} from "../../src/domain/signing.ts";
import { signingMessage as clientMessage, signatureHeader } from "../support/signing.ts";

/** The worked example of docs/signed-operations.md; its signatures were computed with openssl, not with this code. */
const EXAMPLE = {
  secret: "5a1f0c3e9b7d4a2f8c6e1b3d5f7a9c0e2b4d6f8a1c3e5b7d9f0a2c4e6b8d0f1a",
  path: "/public/v1/withdrawals/create",
  timestamp: "1767225600",
  requestId: "0b1f6a8e-3c2d-4e5f-9a7b-1c2d3e4f5a6b",
  body: { withdrawalMethodId: 7, currency: "USDT", amount: "150.25" },
  canonical: '{"amount":"150.25","currency":"USDT","withdrawalMethodId":7}',
  signature: "54cb85330b6b14da507bc54f0430756de2f239efddc207ac36bcedd1267096f9",
  hexDecodedKeySignature: "3f140755d05114a34d02a69d2b99117299b9274d09bd14f377a21e6d277d7bc7",
};

describe("the worked example", () => {
  it("canonicalizes, builds the message and signs it as openssl does", () => {
    const canonical = canonicalJson(EXAMPLE.body);
    expect(canonical).toEqual({ ok: true, value: EXAMPLE.canonical });
    const message = signingMessage({ ...EXAMPLE, canonicalBody: EXAMPLE.canonical });
    expect(message).toBe(
      `POST\n/public/v1/withdrawals/create\n1767225600\n0b1f6a8e-3c2d-4e5f-9a7b-1c2d3e4f5a6b\n${EXAMPLE.canonical}`,
    );
    expect(signatureOf(EXAMPLE.secret, message)).toBe(EXAMPLE.signature);
    expect(signatureMatches(EXAMPLE.secret, message, Buffer.from(EXAMPLE.signature, "hex"))).toBe(true);
    // The same key hex-decoded gives another HMAC: the secret is UTF-8 text.
    expect(signatureMatches(EXAMPLE.secret, message, Buffer.from(EXAMPLE.hexDecodedKeySignature, "hex"))).toBe(false);
  });

  it("agrees with the test client, which was written from the interface text", () => {
    const message = clientMessage({ ...EXAMPLE, body: EXAMPLE.canonical });
    expect(signatureHeader(EXAMPLE.secret, message)).toBe(`v1=${EXAMPLE.signature}`);
    expect(signatureHeader(Buffer.from(EXAMPLE.secret, "hex"), message)).toBe(`v1=${EXAMPLE.hexDecodedKeySignature}`);
  });

  it("refuses any other signature, in constant time over equal lengths", () => {
    const message = signingMessage({ ...EXAMPLE, canonicalBody: EXAMPLE.canonical });
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), (bytes) => {
        const presented = Buffer.from(bytes);
        fc.pre(presented.toString("hex") !== EXAMPLE.signature);
        expect(signatureMatches(EXAMPLE.secret, message, presented)).toBe(false);
      }),
    );
    expect(signatureMatches(EXAMPLE.secret, message, Buffer.alloc(31))).toBe(false);
  });
});

describe("x-service-timestamp", () => {
  const now = 1_767_225_600_000;

  it("accepts whole seconds within five minutes either side", () => {
    for (const offset of [0, 1, -1, TIMESTAMP_TOLERANCE_SECONDS, -TIMESTAMP_TOLERANCE_SECONDS]) {
      expect(checkTimestamp(String(now / 1000 + offset), now)).toEqual({ ok: true, value: now / 1000 + offset });
    }
  });

  it("refuses stale, future and millisecond timestamps", () => {
    for (const text of [String(now / 1000 - 301), String(now / 1000 + 301), String(now), "0"]) {
      expect(checkTimestamp(text, now).ok).toBe(false);
    }
  });

  it("refuses anything but a plain decimal", () => {
    for (const text of [
      undefined,
      "",
      " 1767225600",
      "1767225600 ",
      "+1767225600",
      "01767225600",
      "1767225600.0",
      "1.7672256e9",
      "0x6957e100",
      "１７６７２２５６００",
    ]) {
      expect(checkTimestamp(text, now).ok).toBe(false);
    }
  });

  it("accepts exactly the integers within the window", () => {
    fc.assert(
      fc.property(fc.integer({ min: -10_000, max: 10_000 }), (offset) => {
        const result = checkTimestamp(String(now / 1000 + offset), now);
        expect(result.ok).toBe(Math.abs(offset) <= TIMESTAMP_TOLERANCE_SECONDS);
      }),
    );
  });
});

describe("x-service-request-id", () => {
  it("accepts UUIDs in 8-4-4-4-12 form in either case, keyed lowercase", () => {
    fc.assert(
      fc.property(fc.uuid(), fc.boolean(), (uuid, upper) => {
        const sent = upper ? uuid.toUpperCase() : uuid;
        expect(checkRequestId(sent)).toEqual({ ok: true, value: uuid.toLowerCase() });
      }),
    );
  });

  it("refuses other forms", () => {
    for (const text of [
      undefined,
      "",
      "not-a-uuid",
      "0b1f6a8e3c2d4e5f9a7b1c2d3e4f5a6b",
      "{0b1f6a8e-3c2d-4e5f-9a7b-1c2d3e4f5a6b}",
      "0b1f6a8e-3c2d-4e5f-9a7b-1c2d3e4f5a6",
      "0b1f6a8e-3c2d-4e5f-9a7b-1c2d3e4f5a6bb",
      "0b1f6a8g-3c2d-4e5f-9a7b-1c2d3e4f5a6b",
      " 0b1f6a8e-3c2d-4e5f-9a7b-1c2d3e4f5a6b",
      "urn:uuid:0b1f6a8e-3c2d-4e5f-9a7b-1c2d3e4f5a6b",
    ]) {
      expect(checkRequestId(text).ok).toBe(false);
    }
  });
});

describe("x-service-request-signature", () => {
  it("accepts v1= and 64 lowercase hex characters", () => {
    expect(checkSignatureFormat(`v1=${EXAMPLE.signature}`)).toEqual({
      ok: true,
      value: Buffer.from(EXAMPLE.signature, "hex"),
    });
  });

  it("refuses upper case, short, long, other versions and bare hex", () => {
    for (const text of [
      undefined,
      `v1=${EXAMPLE.signature.toUpperCase()}`,
      `v1=${EXAMPLE.signature.slice(1)}`,
      `v1=${EXAMPLE.signature}0`,
      `v2=${EXAMPLE.signature}`,
      `V1=${EXAMPLE.signature}`,
      EXAMPLE.signature,
      `v1=${EXAMPLE.signature} `,
      `v1=${Buffer.from(EXAMPLE.signature, "hex").toString("base64")}`,
    ]) {
      expect(checkSignatureFormat(text).ok).toBe(false);
    }
  });
});

describe("body hash", () => {
  it("is the same for bodies equal after canonicalization, different otherwise", () => {
    const a = canonicalJson({ b: 1, a: [1.0, "x"] });
    const b = canonicalJson({ a: [1, "x"], b: 1 });
    const c = canonicalJson({ a: [1, "x"], b: 2 });
    if (!a.ok || !b.ok || !c.ok) throw new Error("canonical forms exist");
    expect(bodyHash(a.value)).toBe(bodyHash(b.value));
    expect(bodyHash(a.value)).not.toBe(bodyHash(c.value));
    expect(bodyHash(a.value)).toMatch(/^[0-9a-f]{64}$/);
  });
});
