// RFC 8785 canonicalization against every vector in test/fixtures/jcs (RFC 8785 author's upstream data, Apache-2.0), through the server's parser and canonicalizer and through the test client's.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { canonicalJson } from "../../src/domain/signing.ts";
import { parseJsonBody } from "../../src/http/app.ts";
import { jcs } from "../support/signing.ts";

const VECTORS = process.env.JCS_VECTORS ?? fileURLToPath(new URL("../fixtures/jcs", import.meta.url));
const inputs = readdirSync(join(VECTORS, "input"))
  .filter((name) => name.endsWith(".json"))
  .sort();

/** The server's path for a body: the strict JSON parser of the HTTP layer, then RFC 8785. */
function serverCanonical(bytes: Buffer): Buffer {
  const canonical = canonicalJson(parseJsonBody(bytes.toString("utf8")));
  if (!canonical.ok) throw new Error(`no canonical form: ${canonical.detail}`);
  return Buffer.from(canonical.value, "utf8");
}

describe("RFC 8785 vectors (input -> output, compared as bytes)", () => {
  it("finds the six upstream pairs", () => {
    expect(inputs).toEqual([
      "arrays.json",
      "french.json",
      "structures.json",
      "unicode.json",
      "values.json",
      "weird.json",
    ]);
    expect(readdirSync(join(VECTORS, "output")).sort()).toEqual(inputs);
  });

  for (const name of inputs) {
    it(`${name}: the server canonicalizes it to the expected bytes`, () => {
      const input = readFileSync(join(VECTORS, "input", name));
      const expected = readFileSync(join(VECTORS, "output", name));
      expect(serverCanonical(input).equals(expected)).toBe(true);
      // Canonical output is a fixed point.
      expect(serverCanonical(expected).equals(expected)).toBe(true);
    });

    it(`${name}: the test client's own JCS gives the same bytes`, () => {
      const input = readFileSync(join(VECTORS, "input", name), "utf8");
      const expected = readFileSync(join(VECTORS, "output", name));
      expect(Buffer.from(jcs(JSON.parse(input)), "utf8").equals(expected)).toBe(true);
    });
  }
});

describe("RFC 8785 number serialization (numbers/es6testfile10k.txt)", () => {
  const lines = readFileSync(join(VECTORS, "numbers", "es6testfile10k.txt"), "utf8")
    .split("\n")
    .filter(Boolean);

  it("holds 10,000 lines", () => {
    expect(lines.length).toBe(10_000);
  });

  it("serializes every double as the file says, on the server and in the test client", () => {
    const failures: string[] = [];
    for (const line of lines) {
      const [hex = "", expected = ""] = line.split(",");
      const value = Buffer.from(hex.padStart(16, "0"), "hex").readDoubleBE();
      const server = canonicalJson(value);
      if (!server.ok || server.value !== expected)
        failures.push(`server ${line} -> ${server.ok ? server.value : "error"}`);
      if (jcs(value) !== expected) failures.push(`client ${line} -> ${jcs(value)}`);
      // What a merchant sends is text: the expected form read back must be the same double.
      const reparsed = parseJsonBody(expected);
      if (!Object.is(reparsed, value) && !(value === 0 && reparsed === 0)) failures.push(`round trip ${line}`);
      if (failures.length > 5) break;
    }
    expect(failures).toEqual([]);
  });
});

describe("what RFC 8785 refuses (the vectors only hold positive cases)", () => {
  it("refuses a lone surrogate, in a value or a name", () => {
    for (const text of ['{"a":"\\ud800"}', '{"\\udc00":1}', '["x\\ud83d"]']) {
      // The body parser already refuses these (invalid_text); canonicalization refuses them on its own too.
      expect(() => parseJsonBody(text)).toThrow(/well-formed/);
      const parsed = JSON.parse(text) as unknown;
      const canonical = canonicalJson(parsed);
      expect(canonical.ok).toBe(false);
      expect(() => jcs(parsed)).toThrow(/surrogate/);
    }
  });

  it("keeps a well-formed surrogate pair, sorting names by UTF-16 code units", () => {
    const canonical = canonicalJson(parseJsonBody('{"\\ufb33":1,"\\ud83d\\ude02":2}'));
    expect(canonical).toEqual({ ok: true, value: '{"\ud83d\ude02":2,"\ufb33":1}' });
  });

  it("refuses NaN and Infinity, which no JSON text can carry either", () => {
    expect(canonicalJson(Number.NaN).ok).toBe(false);
    expect(canonicalJson(Number.POSITIVE_INFINITY).ok).toBe(false);
    expect(() => parseJsonBody("[1e400]")).toThrow();
    expect(() => jcs(Number.NaN)).toThrow();
  });

  it("refuses duplicate member names at the parse step, escaped or not (JSON.parse would keep the last)", () => {
    const texts = ['{"a":1,"a":2}', '{"a":1,"\\u0061":2}', '{"x":{"b":1,"b":1}}', '[{"c":"x"},{"c":"y","c":"y"}]'];
    for (const text of texts) {
      expect(() => parseJsonBody(text)).toThrow(expect.objectContaining({ code: "duplicate_member_name" }));
    }
  });

  it("has no canonical form for a missing body", () => {
    expect(canonicalJson(undefined).ok).toBe(false);
  });
});
