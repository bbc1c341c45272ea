// The one transition lookup: every table answers its own rows and refuses every pair it does not list.
import { describe, expect, it } from "vitest";
import { canHotTxTransition, HOT_TX_STATES, HOT_TX_TRANSITIONS } from "../../src/domain/hotTransaction.ts";
import { findTransition, INVOICE_STATUSES, INVOICE_TRANSITIONS } from "../../src/domain/invoiceStatus.ts";
import { canTransition, PAYOUT_STATES, PAYOUT_TRANSITIONS } from "../../src/domain/payout.ts";
import { type TableRow, transition } from "../../src/domain/stateTable.ts";

function pairs<S extends string>(states: readonly S[]): [S, S][] {
  return states.flatMap((from) => states.map((to): [S, S] => [from, to]));
}

function listed<S extends string>(table: readonly TableRow<S>[], from: S, to: S): boolean {
  return table.some((row) => row.from === from && row.to === to);
}

describe("transition", () => {
  it("returns the listed row itself, with its cause", () => {
    const row = transition(INVOICE_TRANSITIONS, "pending", "processing");
    expect(row).toBe(INVOICE_TRANSITIONS.find((t) => t.from === "pending" && t.to === "processing"));
    expect(row?.cause).toBe("payment_seen");
    expect(transition(INVOICE_TRANSITIONS, "completed", "pending")).toBeNull();
  });

  it("is what the invoice table answers, for every pair of statuses", () => {
    for (const [from, to] of pairs(INVOICE_STATUSES)) {
      expect(findTransition(from, to) !== null).toBe(listed(INVOICE_TRANSITIONS, from, to));
    }
  });

  it("is what the payout table answers, for every pair of states", () => {
    for (const [from, to] of pairs(PAYOUT_STATES)) {
      expect(canTransition(from, to)).toBe(listed(PAYOUT_TRANSITIONS, from, to));
    }
  });

  it("is what the payout transaction table answers, for every pair of states", () => {
    for (const [from, to] of pairs(HOT_TX_STATES)) {
      expect(canHotTxTransition(from, to)).toBe(listed(HOT_TX_TRANSITIONS, from, to));
    }
  });
});
