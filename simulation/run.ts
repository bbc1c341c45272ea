// `npm run simulate`: runs seeds of the money rails' fault simulation on worker threads, prints each seed's trace hash and verdict, and shrinks a failing seed to the steps that still fail.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Worker } from "node:worker_threads";
import { GUARDS, type GuardName, isGuardName, switchOffGuard } from "../src/domain/guards.ts";
import type { SeedResult } from "./seed.ts";

const USAGE = `npm run simulate -- [--seeds N] [--from S] [--seed S] [--mutant NAME] [--list-mutants]
                        [--random] [--threads K] [--replay FILE] [--postgres URL] [--no-shrink] [--quiet]
                        [--until-caught]
  --seeds N       run N seeds from --from (default 0); --random adds one random seed, printed
  --seed S        run the one seed S (a failing seed's replay)
  --mutant NAME   switch off one guard of the rails (see --list-mutants): the run must find a violation
  --replay FILE   run the shrunk steps a failing run wrote
  --until-caught  stop at the first seed with a violation (how soon a mutant is caught)
  --postgres URL  the store on PostgreSQL (a database per seed, made from URL's server) instead of SQLite in memory`;

export interface RunRequest {
  seeds: number[];
  /** Stop taking seeds once one has a violation. */
  untilCaught?: boolean;
  mutant: GuardName | null;
  postgresUrl: string | null;
  draws?: readonly number[];
}

function optionsOf() {
  const { values } = parseArgs({
    options: {
      seeds: { type: "string" },
      from: { type: "string" },
      seed: { type: "string" },
      mutant: { type: "string" },
      "list-mutants": { type: "boolean" },
      random: { type: "boolean" },
      threads: { type: "string" },
      replay: { type: "string" },
      postgres: { type: "string" },
      "no-shrink": { type: "boolean" },
      "until-caught": { type: "boolean" },
      quiet: { type: "boolean" },
      help: { type: "boolean" },
    },
  });
  return values;
}

function integer(text: string | undefined, fallback: number, what: string): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isSafeInteger(value) || value < 0) throw new Error(`${what} must be a whole number, not ${text}`);
  return value;
}

/** Runs seeds on `threads` worker threads (each seed in one thread, start to end); answers results as they come. */
export async function runSeeds(
  request: RunRequest,
  threads: number,
  onResult: (result: SeedResult) => void,
): Promise<SeedResult[]> {
  const results: SeedResult[] = [];
  const queue = [...request.seeds];
  let caught = false;
  const count = Math.max(1, Math.min(threads, queue.length));
  await Promise.all(
    Array.from({ length: count }, async () => {
      const worker = new Worker(new URL("./thread.mjs", import.meta.url), {
        // A larger young generation: a seed allocates much and keeps little (fewer, cheaper collections).
        resourceLimits: { maxYoungGenerationSizeMb: 48 },
        workerData: { mutant: request.mutant, postgresUrl: request.postgresUrl, draws: request.draws ?? null },
      });
      try {
        for (let seed = queue.shift(); seed !== undefined && !caught; seed = queue.shift()) {
          const result = await new Promise<SeedResult>((resolve, reject) => {
            worker.once("message", resolve);
            worker.once("error", reject);
            worker.postMessage(seed);
          });
          worker.removeAllListeners("error");
          results.push(result);
          if (request.untilCaught && result.violations.length > 0) caught = true;
          onResult(result);
        }
      } finally {
        await worker.terminate();
      }
    }),
  );
  return results.sort((a, b) => a.seed - b.seed);
}

function printFailure(result: SeedResult, shrunk: SeedResult | null, mutant: GuardName | null): void {
  const flag = mutant ? ` --mutant ${mutant}` : "";
  process.stdout.write(`\nseed ${result.seed} FAILED (trace ${result.traceHash}):\n`);
  for (const v of result.violations) process.stdout.write(`  ${v.invariant}: ${v.detail}\n`);
  process.stdout.write(`  replay: npm run simulate -- --seed ${result.seed}${flag}\n`);
  if (!shrunk) return;
  mkdirSync(".simulation", { recursive: true });
  const file = join(".simulation", `seed-${result.seed}${mutant ? `-${mutant}` : ""}.json`);
  writeFileSync(file, JSON.stringify({ seed: result.seed, mutant, draws: shrunk.draws }));
  process.stdout.write(
    `  shrunk to ${shrunk.steps.length} of ${result.steps.length} steps (still: ${shrunk.violations[0]?.invariant}):\n`,
  );
  for (const [i, line] of shrunk.steps.entries()) process.stdout.write(`    ${String(i + 1).padStart(3)}. ${line}\n`);
  process.stdout.write(`  replay the shrunk steps: npm run simulate -- --replay ${file}\n`);
}

/** What to run: the seeds (a range, one, or a replay's), the replay's draws, and the mutant. */
function planOf(options: ReturnType<typeof optionsOf>): {
  seeds: number[];
  draws: readonly number[] | undefined;
  mutant: GuardName | null;
} {
  const mutant = (options.mutant ?? null) as GuardName | null;
  if (mutant !== null && !isGuardName(mutant)) throw new Error(`no mutant ${mutant}: see --list-mutants`);
  if (options.replay) {
    const saved = JSON.parse(readFileSync(options.replay, "utf8")) as {
      seed: number;
      mutant: GuardName | null;
      draws: number[];
    };
    return { seeds: [saved.seed], draws: saved.draws, mutant: saved.mutant };
  }
  if (options.seed !== undefined) return { seeds: [integer(options.seed, 0, "--seed")], draws: undefined, mutant };
  const from = integer(options.from, 0, "--from");
  const seeds = Array.from({ length: integer(options.seeds, 100, "--seeds") }, (_, i) => from + i);
  if (options.random) {
    const random = Math.floor(Math.random() * 2 ** 31);
    process.stdout.write(`random seed: ${random}\n`);
    seeds.push(random);
  }
  return { seeds, draws: undefined, mutant };
}

async function main(): Promise<number> {
  const options = optionsOf();
  if (options.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (options["list-mutants"]) {
    for (const [name, what] of Object.entries(GUARDS)) process.stdout.write(`${name.padEnd(24)} ${what}\n`);
    return 0;
  }
  const { seeds, draws, mutant } = planOf(options);
  const threads = integer(options.threads, Math.min(availableParallelism(), 4), "--threads");
  const request: RunRequest = {
    seeds,
    mutant,
    postgresUrl: options.postgres ?? null,
    untilCaught: options["until-caught"] ?? false,
    ...(draws ? { draws } : {}),
  };
  const started = performance.now();
  let done = 0;
  const results = await runSeeds(request, threads, (result) => {
    done++;
    const verdict = result.violations.length === 0 ? "ok" : `VIOLATION ${result.violations[0]?.invariant}`;
    if (!options.quiet || result.violations.length > 0 || seeds.length === 1) {
      const t = result.tally;
      process.stdout.write(
        `seed ${result.seed} trace ${result.traceHash} ${verdict} (${t.steps} steps, ${t.blocks} blocks, ${t.transfers} transfers, ${t.requests} requests, ${t.kills} kills, ${t.reorgs} reorgs, ${result.quietRounds} rounds to finish)\n`,
      );
    } else if (done % 50 === 0) process.stdout.write(`${done} of ${seeds.length} seeds\n`);
  });
  const seconds = (performance.now() - started) / 1000;
  const failed = results.filter((r) => r.violations.length > 0);
  process.stdout.write(
    `\n${results.length} seeds, ${failed.length} with violations, ${seconds.toFixed(1)} s, ${(results.length / seconds).toFixed(2)} seeds/s on ${threads} threads${mutant ? `, mutant ${mutant}` : ""}\n`,
  );
  const first = failed[0];
  if (first && options["until-caught"]) process.stdout.write(`caught by seed ${first.seed}\n`);
  if (first) {
    let shrunk: SeedResult | null = null;
    if (!options["no-shrink"] && !draws) {
      switchOffGuard(mutant);
      const { shrink } = await import("./shrink.ts");
      shrunk = await shrink(first, options.postgres);
    }
    printFailure(first, shrunk, mutant);
    for (const other of failed.slice(1))
      process.stdout.write(`also seed ${other.seed}: ${other.violations[0]?.invariant}\n`);
  }
  return failed.length > 0 ? 1 : 0;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  main().then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(2);
    },
  );
}
