// The CPU a request may cost a server that answers at a target rate on this machine, beside the load generator.

export interface BudgetInput {
  /** Cores the machine has: everything (servers, load generator, the kernel's loopback work) shares them. */
  cores: number;
  /** Requests per second the target asks for: the target ratio times the ceiling's rate. */
  targetRate: number;
  /** The load generator's CPU per request, every thread; the cheapest measured is the most generous. */
  loadGeneratorUs: number;
  /** Server processes sharing the load, each with its own event loop. */
  processes: number;
}

export interface Budget {
  /** CPU µs per request left to the server, every thread together, if it used every core's rest. */
  allThreadsUs: number;
  /** µs per request the event loops have together at the target rate (one thread each). */
  eventLoopUs: number;
}

/**
 * At rate R the machine offers `cores` seconds of CPU per second; the load generator takes
 * R × its cost per request, and the server has the rest, spread over R requests. A server whose
 * CPU per request exceeds it cannot reach R here, whatever it overlaps; one whose event loops
 * spend more than (processes × 1 s) ÷ R per request cannot either, unless it moves that work to
 * other threads.
 */
export function budgetAt(input: BudgetInput): Budget {
  if (!(input.cores > 0 && input.targetRate > 0 && input.loadGeneratorUs >= 0 && input.processes >= 1)) {
    throw new Error(`invariant violated: a budget needs cores, a rate and a load cost (${JSON.stringify(input)})`);
  }
  const perRequestUs = (input.cores * 1e6) / input.targetRate;
  return {
    allThreadsUs: Math.max(0, perRequestUs - input.loadGeneratorUs),
    eventLoopUs: (input.processes * 1e6) / input.targetRate,
  };
}

/** "fits" when both the all-thread CPU and the event loop's share are within the budget. */
export function verdict(budget: Budget, cpuUs: number, eventLoopUs: number): string {
  const over: string[] = [];
  if (cpuUs > budget.allThreadsUs) over.push(`CPU +${(cpuUs - budget.allThreadsUs).toFixed(0)}`);
  if (eventLoopUs > budget.eventLoopUs) over.push(`event loop +${(eventLoopUs - budget.eventLoopUs).toFixed(0)}`);
  return over.length === 0 ? "fits" : `over: ${over.join(", ")}`;
}
