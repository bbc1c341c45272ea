// Shrinks a failing seed's steps: the fewest draws (deleting chunks, then single steps) whose run still breaks the same invariant.
import { runSeed, type SeedResult, warmUp } from "./seed.ts";

/** Runs a shrink may spend (each is one seed's run). */
export const SHRINK_RUNS_BOUND = 120;

function breaksSame(result: SeedResult, invariant: string): boolean {
  return result.violations.some((v) => v.invariant === invariant);
}

export async function shrink(failing: SeedResult, databaseUrl?: string): Promise<SeedResult> {
  const invariant = failing.violations[0]?.invariant;
  if (invariant === undefined) return failing;
  await warmUp();
  let best = failing;
  let runs = 0;
  const attempt = async (draws: readonly number[]): Promise<boolean> => {
    if (runs >= SHRINK_RUNS_BOUND) return false;
    runs++;
    const result = await runSeed({ seed: failing.seed, draws, ...(databaseUrl ? { databaseUrl } : {}) });
    if (!breaksSame(result, invariant)) return false;
    best = result;
    return true;
  };
  // What came after the first violation never mattered.
  if (failing.failedAtStep !== null) await attempt(failing.draws.slice(0, failing.failedAtStep + 1));
  for (
    let chunk = Math.ceil(best.draws.length / 2);
    chunk >= 1 && runs < SHRINK_RUNS_BOUND;
    chunk = Math.floor(chunk / 2)
  ) {
    for (let start = 0; start < best.draws.length && runs < SHRINK_RUNS_BOUND; ) {
      const candidate = [...best.draws.slice(0, start), ...best.draws.slice(start + chunk)];
      if (!(await attempt(candidate))) start += chunk;
    }
  }
  return best;
}
