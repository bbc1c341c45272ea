// The EVM payout planner, without a chain: what the hot wallet covers, in order, what fails unsent, what waits, and which facts it asks the node for.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type GasEstimate,
  type PayoutPlan,
  type PlanInput,
  planPayouts,
  type QueuedPayoutFacts,
  withGasMargin,
} from "../../src/domain/payoutPlan.ts";

const TOKEN = "0x00000000000000000000000000000000000000aa";
const FEE = 10n; // wei per gas at the cap

function payout(n: number, amount: bigint, contract: string | null = null, valid = true): QueuedPayoutFacts {
  return { requestKey: `p${n}`, amount, contract, destinationValid: valid };
}

function input(queued: QueuedPayoutFacts[], overrides: Partial<PlanInput> = {}): PlanInput {
  return {
    queued,
    nativeFree: 1_000_000n,
    tokensPromised: new Map(),
    tokenBalances: new Map([[TOKEN, 1_000n]]),
    estimates: new Map(queued.map((p) => [p.requestKey, { ok: true, gas: 21_000n } as GasEstimate])),
    maxFeePerGas: FEE,
    ...overrides,
  };
}

function planOf(plan: PayoutPlan): Extract<PayoutPlan, { kind: "plan" }> {
  expect(plan.kind).toBe("plan");
  return plan as Extract<PayoutPlan, { kind: "plan" }>;
}

/** Answers the planner's questions from a fixed table of what the node would say, as chain/payoutSigning.ts does. */
function planWith(
  queued: QueuedPayoutFacts[],
  node: { balances: Map<string, bigint>; estimates: Map<string, GasEstimate> },
  base: Omit<PlanInput, "queued" | "tokenBalances" | "estimates">,
) {
  const tokenBalances = new Map<string, bigint>();
  const estimates = new Map<string, GasEstimate>();
  const asked: string[] = [];
  for (let round = 0; round <= 2 * queued.length + 1; round++) {
    const plan = planPayouts({ ...base, queued, tokenBalances, estimates });
    if (plan.kind === "plan") return { plan, asked };
    if (plan.fact.kind === "tokenBalance") {
      asked.push(`balance:${plan.fact.contract}`);
      expect(tokenBalances.has(plan.fact.contract)).toBe(false);
      tokenBalances.set(plan.fact.contract, node.balances.get(plan.fact.contract) ?? 0n);
    } else {
      asked.push(`estimate:${plan.fact.requestKey}`);
      expect(estimates.has(plan.fact.requestKey)).toBe(false);
      estimates.set(plan.fact.requestKey, node.estimates.get(plan.fact.requestKey) ?? { ok: true, gas: 21_000n });
    }
  }
  throw new Error("the planner asked more than two facts per payout");
}

describe("planPayouts", () => {
  it("plans every payout the wallet covers, oldest first, each with its gas margin and cost", () => {
    const plan = planOf(planPayouts(input([payout(1, 100n), payout(2, 5n, TOKEN)])));
    const gas = withGasMargin(21_000n);
    expect(gas).toBe(25_200n);
    expect(plan.planned).toEqual([
      { requestKey: "p1", contract: null, amount: 100n, gas, cost: 100n + gas * FEE },
      { requestKey: "p2", contract: TOKEN, amount: 5n, gas, cost: gas * FEE },
    ]);
    expect(plan).toMatchObject({ unsent: [], waitingFrom: null, stoppedEarly: false });
  });

  it("makes the first payout it cannot cover wait, and every one behind it, even one it could cover", () => {
    const gasCost = withGasMargin(21_000n) * FEE;
    const plan = planOf(
      planPayouts(input([payout(1, 10n), payout(2, 1_000_000n), payout(3, 1n)], { nativeFree: 2n * gasCost + 20n })),
    );
    expect(plan.planned.map((p) => p.requestKey)).toEqual(["p1"]);
    expect(plan.waitingFrom).toBe(1);
  });

  it("waits for tokens: a token payout beyond the balance less what is promised", () => {
    const plan = planOf(
      planPayouts(
        input([payout(1, 600n, TOKEN), payout(2, 300n, TOKEN)], { tokensPromised: new Map([[TOKEN, 200n]]) }),
      ),
    );
    expect(plan.planned.map((p) => p.requestKey)).toEqual(["p1"]);
    expect(plan.waitingFrom).toBe(1);
  });

  it("fails unsent a payout to an invalid destination or whose transfer would revert, and plans on", () => {
    const plan = planOf(
      planPayouts(
        input([payout(1, 1n, null, false), payout(2, 1n, TOKEN), payout(3, 1n)], {
          estimates: new Map<string, GasEstimate>([
            ["p2", { ok: false, reverted: true }],
            ["p3", { ok: true, gas: 21_000n }],
          ]),
        }),
      ),
    );
    expect(plan.unsent).toEqual([
      { requestKey: "p1", status: "invalid_destination" },
      { requestKey: "p2", status: "rejected" },
    ]);
    expect(plan.planned.map((p) => p.requestKey)).toEqual(["p3"]);
  });

  it("stops early, without making anything wait, when an estimate fails for another reason", () => {
    const plan = planOf(
      planPayouts(
        input([payout(1, 1n), payout(2, 1n), payout(3, 1n)], {
          estimates: new Map<string, GasEstimate>([
            ["p1", { ok: true, gas: 21_000n }],
            ["p2", { ok: false, reverted: false }],
          ]),
        }),
      ),
    );
    expect(plan).toMatchObject({ waitingFrom: null, stoppedEarly: true });
    expect(plan.planned.map((p) => p.requestKey)).toEqual(["p1"]);
  });

  it("asks for a token balance before it is needed, and for no estimate of a payout it cannot cover", () => {
    const queued = [payout(1, 5n, TOKEN), payout(2, 5_000n, TOKEN), payout(3, 1n)];
    const { plan, asked } = planWith(
      queued,
      { balances: new Map([[TOKEN, 100n]]), estimates: new Map() },
      { nativeFree: 10n ** 18n, tokensPromised: new Map(), maxFeePerGas: FEE },
    );
    expect(asked).toEqual([`balance:${TOKEN}`, "estimate:p1"]);
    expect(plan.waitingFrom).toBe(1);
  });
});

const arbitraryQueue = fc.array(
  fc.record({
    amount: fc.bigInt({ min: 1n, max: 10_000n }),
    token: fc.boolean(),
    valid: fc.integer({ min: 0, max: 4 }).map((n) => n > 0),
    estimate: fc.oneof(
      fc.bigInt({ min: 21_000n, max: 100_000n }).map((gas): GasEstimate => ({ ok: true, gas })),
      fc.boolean().map((reverted): GasEstimate => ({ ok: false, reverted })),
    ),
  }),
  { maxLength: 12 },
);

interface Row {
  amount: bigint;
  token: boolean;
  valid: boolean;
  estimate: GasEstimate;
}

function scenario(rows: readonly Row[]) {
  const queued = rows.map((r, i) => payout(i, r.amount, r.token ? TOKEN : null, r.valid));
  const estimates = new Map<string, GasEstimate>(rows.map((r, i) => [`p${i}`, r.estimate]));
  return { queued, estimates };
}

describe("planPayouts, over generated queues", () => {
  it("never plans more than the wallet holds, in native coin or in tokens", () => {
    fc.assert(
      fc.property(
        arbitraryQueue,
        fc.bigInt({ min: 0n, max: 5_000_000n }),
        fc.bigInt({ min: 0n, max: 20_000n }),
        (rows, nativeFree, tokens) => {
          const { queued, estimates } = scenario(rows);
          const { plan } = planWith(
            queued,
            { balances: new Map([[TOKEN, tokens]]), estimates },
            { nativeFree, tokensPromised: new Map(), maxFeePerGas: FEE },
          );
          const native = plan.planned.reduce((sum, p) => sum + p.cost, 0n);
          const tokenTotal = plan.planned.filter((p) => p.contract === TOKEN).reduce((sum, p) => sum + p.amount, 0n);
          expect(native).toBeLessThanOrEqual(nativeFree);
          expect(tokenTotal).toBeLessThanOrEqual(tokens);
        },
      ),
    );
  });

  it("keeps the order: what is planned or unsent is a prefix of the queue, and nothing after a waiting payout", () => {
    fc.assert(
      fc.property(arbitraryQueue, fc.bigInt({ min: 0n, max: 5_000_000n }), (rows, nativeFree) => {
        const { queued, estimates } = scenario(rows);
        const { plan } = planWith(
          queued,
          { balances: new Map([[TOKEN, 5_000n]]), estimates },
          { nativeFree, tokensPromised: new Map(), maxFeePerGas: FEE },
        );
        const decided = new Set([...plan.planned, ...plan.unsent].map((p) => p.requestKey));
        const firstUndecided = queued.findIndex((p) => !decided.has(p.requestKey));
        const prefix = firstUndecided === -1 ? queued.length : firstUndecided;
        expect(decided.size).toBe(prefix);
        if (plan.waitingFrom !== null) expect(plan.waitingFrom).toBe(prefix);
        const order = plan.planned.map((p) => queued.findIndex((q) => q.requestKey === p.requestKey));
        expect(order).toEqual([...order].sort((a, b) => a - b));
      }),
    );
  });

  it("plans no fewer payouts with more native coin", () => {
    fc.assert(
      fc.property(
        arbitraryQueue,
        fc.bigInt({ min: 0n, max: 5_000_000n }),
        fc.bigInt({ min: 0n, max: 5_000_000n }),
        (rows, a, b) => {
          const { queued, estimates } = scenario(rows);
          const run = (nativeFree: bigint) =>
            planWith(
              queued,
              { balances: new Map([[TOKEN, 5_000n]]), estimates },
              { nativeFree, tokensPromised: new Map(), maxFeePerGas: FEE },
            ).plan.planned.length;
          const [low, high] = a < b ? [a, b] : [b, a];
          expect(run(high)).toBeGreaterThanOrEqual(run(low));
        },
      ),
    );
  });
});
