// One seed's run: set-up, the fault phase of drawn steps with the invariants after each, then faults stop and the rails must finish everything within a bound.
import { FINAL_HOT_TX_STATES } from "../src/domain/hotTransaction.ts";
import { seedDatabase } from "./database.ts";
import { installEnvironment } from "./environment.ts";
import { checkAlways, checkFinal, type Violation } from "./invariants.ts";
import type { SimProcess } from "./process.ts";
import { Random } from "./random.ts";
import { admin } from "./requests.ts";
import { setUp } from "./setup.ts";
import { mine, runStep, WORKERS } from "./steps.ts";
import { NO_FAULTS, type NodeFaults, World } from "./world.ts";

/** Steps of a seed's fault phase. */
export const STEPS_PER_SEED = 160;
/** Once faults stop, the rails have this many rounds (a block on each network and every worker, a minute apart) to finish. */
export const QUIET_ROUNDS_BOUND = 150;

export interface SeedOptions {
  seed: number;
  /** The steps' draws (a shrunk run); the seed's own by default. */
  draws?: readonly number[];
  /** Where the store lives (a SQLite file of its own by default; a PostgreSQL database behind --postgres). */
  databaseUrl?: string;
  /** Print every trace line on stderr as it happens. */
  verbose?: boolean;
}

export interface SeedResult {
  seed: number;
  traceHash: string;
  violations: Violation[];
  /** The step lines, in order (what a failing seed prints, shrunk). */
  steps: string[];
  draws: readonly number[];
  /** The step after which the first violation was seen (null: at the end, or none). */
  failedAtStep: number | null;
  quietRounds: number;
  tally: World["tally"];
}

/** The seed's draws: one number per step, from the seed alone. */
export function drawsOf(seed: number): number[] {
  const master = new Random(seed);
  return Array.from({ length: STEPS_PER_SEED }, () => master.u32());
}

/** The node faults of a seed: each network's chances, drawn once (some seeds see a quiet node). */
function faultProfile(random: Random): NodeFaults {
  return {
    // A scan pass makes tens of calls and one failure ends it: rates per call stay low.
    unreachable: random.pick([0, 0.005, 0.02]),
    hang: random.pick([0, 0.003, 0.01]),
    refuse: random.pick([0, 0.05, 0.2]),
    lose: random.pick([0, 0.05, 0.2]),
    answerLost: random.pick([0, 0.05, 0.15]),
    receiptLagBlocks: random.pick([0, 0, 1, 3]),
    stalledHead: null,
  };
}

/**
 * Loads, once per thread, every module a run uses (the workers' chain modules are imported at a
 * process's first start, and some draw random ids as they load): a seed's run must not depend on
 * which seeds ran before it in the same thread.
 */
export async function warmUp(): Promise<void> {
  await runSeed({ seed: 0, draws: drawsOf(0).slice(0, 60) });
}

export async function runSeed(options: SeedOptions): Promise<SeedResult> {
  const environment = installEnvironment(options.seed);
  let world: World | null = null;
  const database = options.databaseUrl ? null : await seedDatabase(options.seed);
  try {
    const profile = new Random(options.seed ^ 0x0fa17);
    world = await World.create({
      // The scheduler's and the faults' chances: apart from the ids the service draws.
      random: new Random(options.seed ^ 0x5c4ed),
      clock: environment.clock,
      databaseUrl: options.databaseUrl ?? (database?.url as string),
    });
    world.verbose = options.verbose ?? false;
    await setUp(world);
    world.trace("set up");
    for (const network of world.networks.values()) network.faults = faultProfile(profile);
    world.callbackFailure = profile.pick([0, 0.2, 0.5]);
    world.pausing = { chain: 0.06, query: 0.01 };
    await world.startProcess();
    const draws = options.draws ?? drawsOf(options.seed);
    const steps: string[] = [];
    for (const [index, draw] of draws.entries()) {
      const line = await runStep(world, draw);
      steps.push(line);
      world.trace(line);
      const violations = await checkAlways(world);
      if (violations.length > 0)
        return resultOf(world, options.seed, { violations, steps, draws, failedAtStep: index, quietRounds: 0 });
    }
    const quietRounds = await finish(world);
    const violations = await checkFinal(world);
    return resultOf(world, options.seed, { violations, steps, draws, failedAtStep: null, quietRounds });
  } finally {
    await world?.close();
    environment.uninstall();
    database?.drop();
  }
}

function resultOf(
  world: World,
  seed: number,
  parts: Pick<SeedResult, "violations" | "steps" | "draws" | "failedAtStep" | "quietRounds">,
): SeedResult {
  for (const v of parts.violations) world.trace(`violation ${v.invariant}: ${v.detail}`);
  return { seed, traceHash: world.traceHash(), tally: { ...world.tally }, ...parts };
}

/** Whether anything is still under way: a payout, a hot-wallet transaction, a deposit to confirm or flush, a stray to recover. */
async function underWay(world: World): Promise<boolean> {
  const db = world.reads.db;
  const payout = await db
    .selectFrom("payouts")
    .select("request_id")
    .where("state", "not in", ["completed", "failed"])
    .limit(1)
    .execute();
  const hot = await db
    .selectFrom("hot_transactions")
    .select("id")
    .where("state", "not in", [...FINAL_HOT_TX_STATES])
    .limit(1)
    .execute();
  const unconfirmed = await db
    .selectFrom("invoice_payments")
    .select("id")
    .where("confirmed", "=", 0)
    .limit(1)
    .execute();
  const flush = await db
    .selectFrom("flush_deposits")
    .select("id")
    .where("state", "in", ["waiting", "flushing"])
    .limit(1)
    .execute();
  const recovery = await db
    .selectFrom("stray_recoveries")
    .select("id")
    .where("state", "in", ["waiting", "flushing"])
    .limit(1)
    .execute();
  // An invoice still open will expire (or complete): its payments are not settled until then.
  const open = await db
    .selectFrom("invoices")
    .select("id")
    .where("status", "in", ["pending", "processing", "aml_check"])
    .limit(1)
    .execute();
  return payout.length + hot.length + unconfirmed.length + flush.length + recovery.length + open.length > 0;
}

/** Rounds of a block per network and every worker, a minute apart, until nothing is under way for three (bounded). */
async function quietDown(world: World, process: SimProcess, from: number): Promise<number> {
  const random = new Random(1);
  let quiet = 0;
  let round = from;
  for (; round < QUIET_ROUNDS_BOUND && quiet < 2; round++) {
    for (const network of world.networks.values()) await mine(world, network, random);
    for (const name of WORKERS) {
      const loop = process.workers.loops[name];
      if (loop) world.startTask(process, `finish-${name}`, () => loop.runOnce());
      await world.settle();
    }
    // A minute a round: invoices expire, flushes fall due, stuck transactions are replaced, waiting tasks wake.
    world.clock.tick(60_000);
    await world.settle();
    quiet = (await underWay(world)) ? 0 : quiet + 1;
  }
  return round;
}

/**
 * Faults stop: every paused await resumes, a process is alive, and the rails run until nothing is
 * under way. Then the operator accepts whatever waits for a resolution (late payments, underpaid
 * invoices), so that every payment is in the ledger, recovers every stray, and the rails run down
 * again. Answers the rounds.
 */
async function finish(world: World): Promise<number> {
  const running = world.processes.map((p) => `${p.name}: ${[...p.running.keys()].join(" ")}`).join("; ");
  world.trace(
    `faults stop; paused: ${world.parked.map((p) => `${p.process.name} ${p.label}`).join(", ") || "none"}; running: ${running}`,
  );
  world.pausing = { chain: 0, query: 0 };
  world.callbackFailure = 0;
  for (const network of world.networks.values()) network.faults = { ...NO_FAULTS };
  for (const process of world.processes) {
    process.dieAtQuery = null;
    process.frozenSteps = 0;
  }
  while (world.parked.length > 0) await world.resume(0);
  await world.settle();
  if (world.liveProcesses().length === 0) await world.startProcess();
  const process = world.liveProcesses()[0];
  if (!process) throw new Error("no process to finish with");
  // Past every invoice's expiry: each is completed, or expired or failed and waits for a resolution.
  const rounds = await quietDown(world, process, 0);
  for (const invoice of world.invoices) {
    const answer = await admin(process, "POST", `/invoices/${invoice.id}/resolve`, { action: "accept" });
    if (answer.status === 200) world.trace(`  operator accepts ${invoice.id}`);
  }
  // And recovers every stray into the hot wallet: the final holdings count each once, moved or not.
  const strays = await world.reads.db
    .selectFrom("stray_payments")
    .select(["network", "tx_id"])
    .orderBy("tx_id")
    .execute();
  for (const stray of strays) {
    const answer = await admin(
      process,
      "POST",
      `/stray-payments/${encodeURIComponent(`${stray.network}:${stray.tx_id}`)}/recover`,
    );
    world.trace(
      `  operator recovers ${stray.network}:${stray.tx_id.slice(0, 10)}: ${answer.status} ${answer.body?.state ?? answer.body?.code}`,
    );
  }
  const total = await quietDown(world, process, rounds);
  world.trace(`finished after ${total} rounds`);
  return total;
}
