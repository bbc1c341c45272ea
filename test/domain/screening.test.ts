// Screening's pure rules (product §21): list files (plain and OFAC SDN CSV), address comparison, the provider's answer, combining sources, and retries.
import { describe, expect, it } from "vitest";
import {
  afterUnavailable,
  combineVerdicts,
  parseScreeningList,
  providerVerdict,
  screeningKey,
  screeningOffWarning,
} from "../../src/domain/screening.ts";

const EVM = "0x8589427373D6D84E98730D7795D8f6f8731FDA16";

describe("list files", () => {
  it("reads one address per line, # comments and blank lines skipped, EVM addresses without case", () => {
    const parsed = parseScreeningList(`# OFAC\n${EVM}  # Tornado\n\n  bc1qa5wkgaew2dkv56kfvj49j0av5nml45x9ek9hz6  \n`);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.value.format).toBe("plain");
    expect([...parsed.value.addresses]).toEqual([EVM.toLowerCase(), "bc1qa5wkgaew2dkv56kfvj49j0av5nml45x9ek9hz6"]);
    expect(screeningKey(EVM.toUpperCase().replace("0X", "0x"))).toBe(EVM.toLowerCase());
  });

  it("refuses a file with a malformed line, naming the line", () => {
    const parsed = parseScreeningList(`${EVM}\nnot an address\n0x123\n`);
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(parsed.detail).toMatch(/2 malformed line\(s\): line 2: .*; line 3: /);
    expect(parsed.rejected?.problemCount).toBe(2);
  });

  it("reads the digital currency addresses of the OFAC SDN CSV", () => {
    const csv = [
      '36216,"LAZARUS GROUP",-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,"a.k.a. ...; Digital Currency Address - ETH 0x098B716B8Aaf21512996dC57EB0615e2383E2f96; Digital Currency Address - XBT 12QtD5BFwRsdNsAZY76UVE1xyCGNTojH9h."',
      '12345,"SOMEONE",individual,-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,-0- ,"DOB 1970."',
    ].join("\n");
    const parsed = parseScreeningList(csv);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.value.format).toBe("ofac_sdn_csv");
    expect([...parsed.value.addresses]).toEqual([
      "0x098b716b8aaf21512996dc57eb0615e2383e2f96",
      "12QtD5BFwRsdNsAZY76UVE1xyCGNTojH9h",
    ]);
  });
});

describe("the provider's answer and the sources together", () => {
  it("is listed with identifications, clear without, and no answer for anything else", () => {
    expect(providerVerdict({ identifications: [{ category: "sanctions" }] })).toBe("listed");
    expect(providerVerdict({ identifications: [] })).toBe("clear");
    for (const garbage of [null, "x", 3, {}, { identifications: "yes" }, []]) {
      expect(providerVerdict(garbage)).toBe("unavailable");
    }
  });

  it("a listing wins, then a source without an answer; nothing configured is clear", () => {
    expect(combineVerdicts(["clear", "unavailable", "listed"])).toBe("listed");
    expect(combineVerdicts(["clear", "unavailable"])).toBe("unavailable");
    expect(combineVerdicts([])).toBe("clear");
  });

  it("retries with a doubling, capped delay, then flags after the last attempt", () => {
    const rule = { baseMs: 1000, capMs: 5000, maxAttempts: 5 };
    expect([1, 2, 3, 4].map((n) => afterUnavailable(n, rule))).toEqual([
      { kind: "retry", delayMs: 1000 },
      { kind: "retry", delayMs: 2000 },
      { kind: "retry", delayMs: 4000 },
      { kind: "retry", delayMs: 5000 },
    ]);
    expect(afterUnavailable(5, rule)).toEqual({ kind: "flag" });
  });
});

describe("screening off", () => {
  it("is said in live mode without a list or a provider, and only then", () => {
    const none = { list: null, provider: null };
    expect(screeningOffWarning("live", none)).toMatch(/^screening is off/);
    expect(screeningOffWarning("sandbox", none)).toBeNull();
    const list = { list: {} as never, provider: null };
    expect(screeningOffWarning("live", list)).toBeNull();
  });
});
