// The payout state machine: the table is the only source of allowed transitions, and it is coherent.
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  canTransition,
  isSettled,
  PAYOUT_STATES,
  PAYOUT_TRANSITIONS,
  type PayoutState,
  publicStatus,
} from "../../src/domain/payout.ts";

describe("PAYOUT_TRANSITIONS", () => {
  it("allows exactly the listed pairs, each listed once with a reason", () => {
    const listed = new Set(PAYOUT_TRANSITIONS.map((t) => `${t.from}->${t.to}`));
    expect(listed.size).toBe(PAYOUT_TRANSITIONS.length);
    for (const from of PAYOUT_STATES) {
      for (const to of PAYOUT_STATES) expect(canTransition(from, to)).toBe(listed.has(`${from}->${to}`));
    }
    for (const t of PAYOUT_TRANSITIONS) expect(t.why.length).toBeGreaterThan(10);
  });

  it("never leaves a settled state, and every unsettled state can still settle both ways", () => {
    for (const state of PAYOUT_STATES) {
      const out = PAYOUT_TRANSITIONS.filter((t) => t.from === state).map((t) => t.to);
      if (isSettled(state)) expect(out).toEqual([]);
      // Awaiting approval: it fails by a rejection, and completes only once approved (through queued).
      else if (state === "awaiting_approval") expect(out.sort()).toEqual(["failed", "queued"]);
      else if (state !== "sent") expect(out).toEqual(expect.arrayContaining(["completed", "failed"]));
      else expect(out.sort()).toEqual(["completed", "failed", "needs_reconciliation"]);
    }
  });

  it("reaches every state from the two a payout is accepted in: queued, or awaiting approval", () => {
    const seen = new Set<PayoutState>(["queued", "awaiting_approval"]);
    for (let round = 0; round < PAYOUT_STATES.length; round++) {
      for (const t of PAYOUT_TRANSITIONS) if (seen.has(t.from)) seen.add(t.to);
    }
    expect([...seen].sort()).toEqual([...PAYOUT_STATES].sort());
  });

  it("never resends: nothing goes back to queued or sending except the first claim and an approval", () => {
    const back = PAYOUT_TRANSITIONS.filter(
      (t) => (t.to === "queued" && t.from !== "awaiting_approval") || (t.to === "sending" && t.from !== "queued"),
    );
    expect(back).toEqual([]);
    expect(canTransition("needs_reconciliation", "sending")).toBe(false);
    expect(canTransition("needs_reconciliation", "sent")).toBe(false);
  });

  it("keeps any walk through the table within one settlement", () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...PAYOUT_STATES), { maxLength: 30 }), (attempts) => {
        let state: PayoutState = "queued";
        let settlements = 0;
        for (const next of attempts) {
          if (!canTransition(state, next)) continue;
          state = next;
          if (isSettled(state)) settlements += 1;
        }
        expect(settlements).toBeLessThanOrEqual(1);
      }),
    );
  });

  it("shows processing until settled", () => {
    expect(PAYOUT_STATES.map(publicStatus)).toEqual([
      "processing",
      "processing",
      "processing",
      "processing",
      "processing",
      "completed",
      "failed",
    ]);
  });

  it("is documented row for row in docs/signed-operations.md", () => {
    const doc = readFileSync(new URL("../../docs/signed-operations.md", import.meta.url), "utf8");
    const rows = doc.split("\n").filter((line) => /^\| `[a-z_]+` \| `[a-z_]+` \|/.test(line));
    expect(rows).toEqual(PAYOUT_TRANSITIONS.map((t) => `| \`${t.from}\` | \`${t.to}\` | ${t.why} |`));
  });
});
