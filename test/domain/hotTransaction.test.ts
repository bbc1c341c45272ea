// Live payout transactions: the state table, the replacement fee bump, the overdue rule and confirmations.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  bumpFees,
  canHotTxTransition,
  confirmationsOf,
  type Fees,
  HOT_TX_STATES,
  HOT_TX_TRANSITIONS,
  type HotTxState,
  initialFees,
  isFinalHotTxState,
  isOpenHotTxState,
  isOverdue,
} from "../../src/domain/hotTransaction.ts";

describe("HOT_TX_TRANSITIONS", () => {
  it("allows exactly the listed pairs, each once with a reason", () => {
    const listed = new Set(HOT_TX_TRANSITIONS.map((t) => `${t.from}->${t.to}`));
    expect(listed.size).toBe(HOT_TX_TRANSITIONS.length);
    for (const from of HOT_TX_STATES) {
      for (const to of HOT_TX_STATES) expect(canHotTxTransition(from, to)).toBe(listed.has(`${from}->${to}`));
    }
    for (const t of HOT_TX_TRANSITIONS) expect(t.why.length).toBeGreaterThan(10);
  });

  it("never leaves a final state, and every open state can still end", () => {
    for (const state of HOT_TX_STATES) {
      const out = HOT_TX_TRANSITIONS.filter((t) => t.from === state).map((t) => t.to);
      if (isFinalHotTxState(state)) expect(out).toEqual([]);
      else expect(out.length).toBeGreaterThan(0);
    }
    expect(HOT_TX_STATES.filter(isOpenHotTxState)).toEqual(["signed", "broadcast", "dropped"]);
  });

  it("reaches every state from signed, and confirmed or reverted only through mined", () => {
    const seen = new Set<HotTxState>(["signed"]);
    for (let round = 0; round < HOT_TX_STATES.length; round++) {
      for (const t of HOT_TX_TRANSITIONS) if (seen.has(t.from)) seen.add(t.to);
    }
    expect([...seen].sort()).toEqual([...HOT_TX_STATES].sort());
    for (const t of HOT_TX_TRANSITIONS) {
      if (t.to === "confirmed" || t.to === "reverted") expect(t.from).toBe("mined");
    }
    // A transaction that was mined is never called replaced: only one of a nonce's transactions is mined.
    expect(canHotTxTransition("mined", "replaced")).toBe(false);
  });

  it("keeps any walk through the table at one final outcome", () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...HOT_TX_STATES), { maxLength: 40 }), (steps) => {
        let state: HotTxState = "signed";
        let finals = 0;
        for (const next of steps) {
          if (!canHotTxTransition(state, next)) continue;
          state = next;
          if (isFinalHotTxState(state)) finals += 1;
        }
        expect(finals).toBeLessThanOrEqual(1);
      }),
    );
  });
});

const gwei = (n: number) => BigInt(n) * 1_000_000_000n;
const feesArb = fc
  .tuple(fc.bigInt({ min: 1n, max: gwei(5000) }), fc.bigInt({ min: 0n, max: gwei(5000) }))
  .map(
    ([a, b]): Fees =>
      b > a ? { maxFeePerGas: b, maxPriorityFeePerGas: a } : { maxFeePerGas: a, maxPriorityFeePerGas: b },
  );

describe("initialFees", () => {
  it("takes the suggestion under the cap and caps it otherwise, the priority fee never above the maximum", () => {
    expect(initialFees({ maxFeePerGas: gwei(30), maxPriorityFeePerGas: gwei(2) }, gwei(100))).toEqual({
      maxFeePerGas: gwei(30),
      maxPriorityFeePerGas: gwei(2),
    });
    expect(initialFees({ maxFeePerGas: gwei(300), maxPriorityFeePerGas: gwei(200) }, gwei(100))).toEqual({
      maxFeePerGas: gwei(100),
      maxPriorityFeePerGas: gwei(100),
    });
    fc.assert(
      fc.property(feesArb, fc.bigInt({ min: 1n, max: gwei(10000) }), (suggested, cap) => {
        const fees = initialFees(suggested, cap);
        expect(fees.maxFeePerGas <= cap).toBe(true);
        expect(fees.maxPriorityFeePerGas <= fees.maxFeePerGas).toBe(true);
        expect(fees.maxFeePerGas <= suggested.maxFeePerGas).toBe(true);
      }),
    );
  });
});

describe("bumpFees", () => {
  it("raises both fields by at least 10%, rounding up", () => {
    const bumped = bumpFees(
      { maxFeePerGas: 101n, maxPriorityFeePerGas: 11n },
      { maxFeePerGas: 1n, maxPriorityFeePerGas: 1n },
      1000n,
    );
    expect(bumped).toEqual({ ok: true, value: { maxFeePerGas: 112n, maxPriorityFeePerGas: 13n } });
  });

  it("follows a higher suggestion", () => {
    const bumped = bumpFees(
      { maxFeePerGas: gwei(10), maxPriorityFeePerGas: gwei(1) },
      { maxFeePerGas: gwei(50), maxPriorityFeePerGas: gwei(3) },
      gwei(100),
    );
    expect(bumped).toEqual({ ok: true, value: { maxFeePerGas: gwei(50), maxPriorityFeePerGas: gwei(3) } });
  });

  it("refuses when the bump alone passes the cap, and caps a suggestion above it", () => {
    expect(
      bumpFees(
        { maxFeePerGas: gwei(95), maxPriorityFeePerGas: gwei(1) },
        { maxFeePerGas: 0n, maxPriorityFeePerGas: 0n },
        gwei(100),
      ).ok,
    ).toBe(false);
    expect(
      bumpFees(
        { maxFeePerGas: gwei(50), maxPriorityFeePerGas: gwei(1) },
        { maxFeePerGas: gwei(500), maxPriorityFeePerGas: gwei(2) },
        gwei(100),
      ),
    ).toEqual({ ok: true, value: { maxFeePerGas: gwei(100), maxPriorityFeePerGas: gwei(2) } });
  });

  it("always answers a replacement a node accepts, within the cap, or refuses", () => {
    fc.assert(
      fc.property(feesArb, feesArb, fc.bigInt({ min: 1n, max: gwei(10000) }), (previous, suggested, cap) => {
        const bumped = bumpFees(previous, suggested, cap);
        if (!bumped.ok) {
          // Refused only when a 10% bump of a field cannot fit under the cap.
          expect(previous.maxFeePerGas * 110n > cap * 100n || previous.maxPriorityFeePerGas * 110n > cap * 100n).toBe(
            true,
          );
          return;
        }
        const next = bumped.value;
        expect(next.maxFeePerGas * 100n >= previous.maxFeePerGas * 110n).toBe(true);
        expect(next.maxPriorityFeePerGas * 100n >= previous.maxPriorityFeePerGas * 110n).toBe(true);
        expect(next.maxFeePerGas <= cap).toBe(true);
        expect(next.maxPriorityFeePerGas <= next.maxFeePerGas).toBe(true);
      }),
    );
  });
});

describe("isOverdue and confirmationsOf", () => {
  it("counts a transaction overdue from its last broadcast", () => {
    expect(isOverdue("2026-01-01T00:00:00.000Z", "2026-01-01T00:00:59.999Z", 60_000)).toBe(false);
    expect(isOverdue("2026-01-01T00:00:00.000Z", "2026-01-01T00:01:00.000Z", 60_000)).toBe(true);
  });

  it("counts the block that holds it as the first confirmation", () => {
    expect(confirmationsOf(null, 100n)).toBe(0n);
    expect(confirmationsOf(100n, 100n)).toBe(1n);
    expect(confirmationsOf(100n, 111n)).toBe(12n);
    expect(confirmationsOf(101n, 100n)).toBe(0n);
  });
});
