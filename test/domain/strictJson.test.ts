// Repeated member names: found wherever they are, never invented where names only look alike.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { repeatedMemberName } from "../../src/http/strictJson.ts";

describe("repeatedMemberName", () => {
  it("finds none in what JSON.stringify writes", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(repeatedMemberName(JSON.stringify(value) ?? "null")).toBeNull();
        expect(repeatedMemberName(JSON.stringify(value, null, 2) ?? "null")).toBeNull();
      }),
    );
  });

  it("finds a repeated name at any depth, whatever the values", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.string(), fc.jsonValue(), fc.jsonValue(), (outer, name, a, b) => {
        const inner = `{${JSON.stringify(name)}:${JSON.stringify(a)},${JSON.stringify(name)}:${JSON.stringify(b)}}`;
        const text = `[${JSON.stringify(outer)},{"wrap":${inner}}]`;
        expect(repeatedMemberName(text)).toBe(name);
      }),
    );
  });

  it("compares names after unescaping, and ignores look-alikes inside strings", () => {
    expect(repeatedMemberName('{"a":1,"\\u0061":1}')).toBe("a");
    expect(repeatedMemberName('{"a":"\\",\\"a\\":1","b":{"a":2}}')).toBeNull();
    expect(repeatedMemberName('{"a":["a","a"],"b":[{"a":1},{"a":1}]}')).toBeNull();
    expect(repeatedMemberName('{"\\\\":1,"\\\\":2}')).toBe("\\");
  });
});
