// One simulated service process: the real context, HTTP app and workers over the shared store and the simulated nodes, with every I/O an await point where the scheduler may pause or kill it.
import type {
  KyselyPlugin,
  PluginTransformQueryArgs,
  PluginTransformResultArgs,
  QueryResult,
  RootOperationNode,
  UnknownRow,
} from "kysely";
import { pino } from "pino";
import type { ServiceContext } from "../src/app/context.ts";
import { prepare } from "../src/bootstrap.ts";
import type { Config } from "../src/config.ts";
import type { ChainClient, Wallet } from "../src/domain/chain.ts";
import { buildApp } from "../src/http/app.ts";
import type { App } from "../src/http/routeHost.ts";
import type { Store } from "../src/store/store.ts";
import type { CallbackAnswer, CallbackPost } from "../src/workers/callbackHttp.ts";
import { startWorkers, type Workers } from "../src/workers/index.ts";
import type { Random } from "./random.ts";

/** What a killed process's next await throws: nothing after it runs against the world. */
export class Killed extends Error {
  constructor() {
    super("the process was killed");
    this.name = "Killed";
  }
}

/** A continuation of a process paused at an await, which the scheduler resumes or kills. */
export interface Parked {
  process: SimProcess;
  /** What it waits on (`chain:sendRawTransaction`, `query`, `hang`): the trace names it. */
  label: string;
  resume(): void;
  kill(): void;
}

/** What a process needs from the simulation: where it parks, its chance to, and the nodes. */
export interface ProcessHost {
  park(parked: Omit<Parked, "resume" | "kill">): Promise<void>;
  /** Whether this await pauses (seeded). */
  pauses(label: string): boolean;
  /** The simulated node of `network` as this process reaches it (faults included). */
  nodeOf(process: SimProcess, rpcUrl: string): ChainClient;
  /** A merchant's callback endpoint. */
  postCallback(post: CallbackPost): Promise<CallbackAnswer>;
  random: Random;
  /** An error the service logged (its HTTP app's 500s, a worker's failure): each is a finding. */
  logged(line: string): void;
  /** Transactions whose work runs now (the write lock held), all processes together. */
  openTransactions: number;
}

/**
 * A process's queries: each is where it may die (a transaction then rolls back, as a crash's
 * would); inside a transaction each is also where it may pause, holding the write lock as a slow
 * transaction does. Reads outside transactions never pause: they would hold the read connection.
 */
class QueryPoints implements KyselyPlugin {
  constructor(
    readonly process: SimProcess,
    readonly inTransaction: boolean,
  ) {}
  transformQuery(args: PluginTransformQueryArgs): RootOperationNode {
    this.process.query();
    return args.node;
  }
  async transformResult(args: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    if (this.inTransaction) await this.process.await("query in transaction");
    return args.result;
  }
}

/** The shared store as one process reaches it: its transactions and queries are its await points. */
function storeOf(shared: Store, process: SimProcess): Store {
  const reads = new QueryPoints(process, false);
  const writes = new QueryPoints(process, true);
  return {
    ...shared,
    db: shared.db.withPlugin(reads),
    transaction: async (work) => {
      await process.await("transaction");
      const result = await shared.transaction(async (tx) => {
        process.host.openTransactions++;
        try {
          return await work({ ...tx, db: tx.db.withPlugin(writes) });
        } finally {
          process.host.openTransactions--;
        }
      });
      await process.await("committed");
      return result;
    },
    // The simulation owns the shared store: a process's close leaves it open.
    close: async () => {},
  };
}

export class SimProcess {
  dead = false;
  /** Steps for which its paused awaits are not resumed (a stalled process, the freeze step). */
  frozenSteps = 0;
  /** While it starts (migrations checked, catalog seeded, app built) it never pauses: the scheduler awaits the start. */
  starting = true;
  ctx!: ServiceContext;
  app!: App;
  workers!: Workers;
  /** Tasks started and not finished, by name (one of each at a time). */
  readonly running = new Map<string, Promise<unknown>>();

  private constructor(
    readonly name: string,
    readonly host: ProcessHost,
  ) {}

  static async start(input: {
    name: string;
    host: ProcessHost;
    config: Config;
    store: Store;
    wallet: Wallet;
  }): Promise<SimProcess> {
    const process = new SimProcess(input.name, input.host);
    const store = storeOf(input.store, process);
    const { ctx } = await prepare(
      input.config,
      {},
      {
        store,
        wallet: input.wallet,
        chainClientFactory: (rpcUrl) => input.host.nodeOf(process, rpcUrl),
      },
    );
    process.ctx = ctx;
    // What the service logs at error level is a finding (a 500, a worker batch that failed).
    const log = pino({ level: "error" }, { write: (line: string) => input.host.logged(line) });
    process.app = await buildApp(ctx, { logger: log, pluginTimeoutMs: 0 });
    process.workers = await startWorkers(ctx, log, {
      autoStart: false,
      callbacks: {
        post: (post) => input.host.postCallback(post),
        // Every merchant endpoint of the simulation is one public address.
        lookup: async () => [{ address: "93.184.216.34", family: 4 }],
      },
    });
    process.starting = false;
    return process;
  }

  /** Dies at its k-th query from now (a kill in the middle of a transaction); null: not doomed. */
  dieAtQuery: number | null = null;

  /** A query of this process is about to run: it throws if the process is dead or dies here. */
  query(): void {
    if (this.dieAtQuery !== null && --this.dieAtQuery <= 0) this.dead = true;
    if (this.dead) throw new Killed();
  }

  /** An await of this process: it may pause here (the scheduler resumes it later) and, killed, goes no further. */
  async await(label: string): Promise<void> {
    if (this.dead) throw new Killed();
    if (!this.starting && this.host.pauses(label)) await this.host.park({ process: this, label });
    if (this.dead) throw new Killed();
  }

  /** Starts a task unless one of that name runs; it never rejects (a killed task just ends, an error is reported). */
  startTask(name: string, work: () => Promise<unknown>, failed: (error: unknown) => void): boolean {
    if (this.dead || this.running.has(name)) return false;
    const task = work()
      .catch((error: unknown) => {
        if (error instanceof Killed || this.dead) return;
        failed(error);
      })
      .finally(() => this.running.delete(name));
    this.running.set(name, task);
    return true;
  }
}
