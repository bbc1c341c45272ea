// The simulated world of one seed: the networks and their nodes' faults, the shared store, the service's processes, the merchants and payers, and the scheduler of every await.
import crypto, { createHash } from "node:crypto";
import { type Hex, keccak256 } from "viem";
import { hdWallet } from "../src/chain/wallet.ts";
import { type Config, loadConfig } from "../src/config.ts";
import type { ChainClient, ChainReceipt, ChainResult, Wallet } from "../src/domain/chain.ts";
import { assert, err, ok } from "../src/domain/result.ts";
import { openStore, type Store } from "../src/store/store.ts";
import type { CallbackAnswer, CallbackPost } from "../src/workers/callbackHttp.ts";
import { SIMULATION_STORE_OPTIONS } from "./database.ts";
import { realDelay } from "./environment.ts";
import { deployTestToken, type SimAccount, SimulatedNetwork, simAccount } from "./network.ts";
import { Killed, type Parked, type ProcessHost, SimProcess } from "./process.ts";
import type { Random } from "./random.ts";

/** The service's wallet in every run (a test phrase: its accounts exist only in the simulation). */
export const SIMULATION_MNEMONIC = "legal winner thank year wave sausage worth useful legal winner thank yellow";
/** What a node call that hangs costs before the service's client gives up (src/chain/rpc.ts). */
export const HANG_MS = 10_000;
const ETHER = 10n ** 18n;
/**
 * Arachnid's deterministic deployment proxy, deployed as on every public network: its published,
 * pre-signed transaction (no chain id), sent from a keyless account funded with exactly its gas.
 */
const PROXY_DEPLOYER = "0x3fab184622dc19b6109349b94811493bf2a45362";
const PROXY_DEPLOYMENT: Hex =
  "0xf8a58085174876e800830186a08080b853604580600e600039806000f350fe7fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffe03601600081602082378035828234f58015156039578182fd5b8082525050506014600cf31ba02222222222222222222222222222222222222222222222222222222222222222a02222222222222222222222222222222222222222222222222222222222222222";
/** Every payer starts with this much of the test token (6 decimals): far more than any invoice. */
const PAYER_TOKENS = 10n ** 12n;

/** One simulated network: its name in the service, chain, confirmations and the deepest reorganisation it sees. */
export interface NetworkSpec {
  name: string;
  internalTicker: string;
  chainId: number;
  confirmations: number;
  /** Reorganisations stay shallower than the confirmations: a deeper one undoes what the service was told is final. */
  maxReorgDepth: number;
  networkFee: string;
}

export const NETWORKS: readonly NetworkSpec[] = [
  { name: "ethereum", internalTicker: "USDT_ERC20", chainId: 1, confirmations: 7, maxReorgDepth: 6, networkFee: "1" },
  { name: "base", internalTicker: "USDT_BASE", chainId: 8453, confirmations: 3, maxReorgDepth: 2, networkFee: "2" },
];

/** A node's faults now, as probabilities per call (all zero once faults stop). */
export interface NodeFaults {
  unreachable: number;
  hang: number;
  refuse: number;
  /** The node answers a broadcast with its hash but never passes it on. */
  lose: number;
  /** The node takes a broadcast but its answer is lost (the caller sees a timeout). */
  answerLost: number;
  /** The node's receipts lag its head: a receipt shows only once its block is this many deep (0: at once). */
  receiptLagBlocks: number;
  /** The head the node reports while it stalls; null when it does not. */
  stalledHead: bigint | null;
}

export const NO_FAULTS: NodeFaults = {
  unreachable: 0,
  hang: 0,
  refuse: 0,
  lose: 0,
  answerLost: 0,
  receiptLagBlocks: 0,
  stalledHead: null,
};

export interface SimNetwork {
  spec: NetworkSpec;
  chain: SimulatedNetwork;
  token: Hex;
  /** Mints test tokens to `to` and mines them (set-up only). */
  mint(to: Hex, amount: bigint): Promise<void>;
  faults: NodeFaults;
  rpcUrl: string;
}

export interface Merchant {
  id: string;
  apiKey: string;
  secretKey: string;
  /** Its withdrawal method per internal ticker. */
  methods: Map<string, { id: number; address: Hex }>;
  /** Withdrawals it asked for (a retry sends one again). */
  withdrawals: { requestId: string; body: Record<string, unknown> }[];
}

/** An invoice the generator made, with what the world knows of it. */
export interface SimInvoice {
  id: string;
  merchant: Merchant;
  currency: string;
  amountMinor: bigint;
  address: Hex;
  /** The networks it takes payments on. */
  networks: string[];
  expiresAtMs: number;
  /** The request id of its refund (a retry of the refund reuses it). */
  refundRequestId: string;
}

/** Counters the run reports. */
export interface Tally {
  steps: number;
  transfers: number;
  requests: number;
  kills: number;
  reorgs: number;
  blocks: number;
}

/** Which awaits pause and how often (the fault phase); none pause during set-up and once faults stop. */
export interface Pausing {
  chain: number;
  query: number;
}

export class World implements ProcessHost {
  readonly networks = new Map<string, SimNetwork>();
  readonly processes: SimProcess[] = [];
  readonly parked: Parked[] = [];
  readonly merchants: Merchant[] = [];
  readonly invoices: SimInvoice[] = [];
  readonly payers: SimAccount[] = [0, 1, 2, 3].map((i) => simAccount(`payer-${i}`));
  /** The test token's issuer on every network (it mints, and blocks addresses). */
  readonly tokenOwner: SimAccount = simAccount("token-owner");
  /** Withdrawal addresses the token's issuer blocked (the blacklist step toggles them). */
  readonly blocked = new Set<Hex>();
  readonly tally: Tally = { steps: 0, transfers: 0, requests: 0, kills: 0, reorgs: 0, blocks: 0 };
  /** Errors a task threw that were not its process's death: each is a finding. */
  readonly taskErrors: string[] = [];
  pausing: Pausing = { chain: 0, query: 0 };
  /** Callback endpoints' chance to fail an attempt. */
  callbackFailure = 0;
  /** Echo every trace line on stderr (--verbose). */
  verbose = false;
  activity = 0;
  openTransactions = 0;
  readonly #trace = createHash("sha256");
  readonly #traceLines: string[] = [];
  #processCount = 0;

  private constructor(
    readonly random: Random,
    readonly store: Store,
    /**
     * What the simulation itself reads through (its invariants, its steps' lookups): on SQLite the
     * store's own read connection; on PostgreSQL a pool of its own, so that transactions the
     * processes hold paused never leave it without a connection.
     */
    readonly reads: Store,
    readonly config: Config,
    readonly wallet: Wallet,
    readonly clock: { now: number; tick(ms: number): unknown },
  ) {}

  static async create(input: {
    random: Random;
    clock: { now: number; tick(ms: number): unknown };
    databaseUrl: string;
  }): Promise<World> {
    const config = loadConfig({
      DATABASE_URL: input.databaseUrl,
      ADMIN_TOKEN: "simulation-admin-token",
      SECRET_ENCRYPTION_KEY: "5".repeat(64),
      SERVICE_MODE: "live",
      WALLET_MNEMONIC: SIMULATION_MNEMONIC,
      PUBLIC_BASE_URL: "https://pay.simulation.test",
      RATE_LIMIT_PER_MINUTE: "0",
      ADMIN_RATE_LIMIT_PER_MINUTE: "0",
      PAYER_RATE_LIMIT_PER_MINUTE: "0",
      WEBHOOK_RATE_LIMIT_PER_MINUTE: "0",
      UNKNOWN_KEY_RATE_LIMIT_PER_MINUTE: "0",
      LOG_LEVEL: "silent",
      FLUSH_BATCH_SIZE: "3",
      FLUSH_MAX_WAIT_MS: "60000",
    });
    const postgres = !input.databaseUrl.startsWith("sqlite:");
    // Paused transactions hold their connections: PostgreSQL's pool has room for all of them.
    const store = await openStore(input.databaseUrl, { ...SIMULATION_STORE_OPTIONS, poolSize: 64 });
    const reads = postgres ? await openStore(input.databaseUrl, { poolSize: 2 }) : store;
    const world = new World(input.random, store, reads, config, walletOf(), input.clock);
    await world.#createNetworks();
    return world;
  }

  async #createNetworks(): Promise<void> {
    const owner = this.tokenOwner;
    for (const spec of NETWORKS) {
      const chain = await SimulatedNetwork.create({
        chainId: spec.chainId,
        funded: [
          { address: this.wallet.hotAddress, wei: 1000n * ETHER },
          { address: owner.address, wei: 10n * ETHER },
          { address: PROXY_DEPLOYER, wei: 10n ** 16n },
          ...this.payers.map((p) => ({ address: p.address, wei: 10n * ETHER })),
        ],
      });
      const proxy = await chain.client().sendRawTransaction(PROXY_DEPLOYMENT);
      assert(proxy.ok, `the deployment proxy's transaction is taken: ${proxy.ok ? "" : proxy.detail}`);
      await chain.mine(this.nextSecond());
      const token = await deployTestToken(chain, owner, this.nextSecond());
      for (const payer of this.payers) await token.mint(payer.address, PAYER_TOKENS, this.nextSecond());
      const rpcUrl = `https://${spec.name}.node.simulation.test/`;
      this.networks.set(spec.name, {
        spec,
        chain,
        token: token.address,
        mint: (to, amount) => token.mint(to, amount, this.nextSecond()),
        faults: { ...NO_FAULTS },
        rpcUrl,
      });
    }
  }

  /** The clock a second on, in seconds (set-up's blocks, each after the last). */
  nextSecond(): bigint {
    this.clock.tick(1000);
    return this.nowSeconds();
  }

  /** Seconds of the simulated clock, for a block: strictly after the network's last one. */
  nowSeconds(): bigint {
    return BigInt(Math.floor(this.clock.now / 1000));
  }

  /** Starts a service process on the shared store. */
  async startProcess(): Promise<SimProcess> {
    const process = await SimProcess.start({
      name: `p${this.#processCount++}`,
      host: this,
      config: this.config,
      store: this.store,
      wallet: this.wallet,
    });
    this.processes.push(process);
    return process;
  }

  /**
   * Starts a process, unless a paused transaction holds the write lock (its start would wait on it
   * while the scheduler waits on the start): then it answers null and a later step starts one. A
   * start reads files (the HTTP app's), real I/O, so nothing else may run meanwhile.
   */
  async bootProcess(): Promise<string | null> {
    if (this.openTransactions > 0) return null;
    const process = await this.startProcess();
    await this.settle();
    return process.name;
  }

  /** Kills a process: every paused await of it throws, and so does every later one. */
  kill(process: SimProcess): void {
    process.dead = true;
    for (const parked of this.parked.filter((p) => p.process === process)) {
      this.parked.splice(this.parked.indexOf(parked), 1);
      parked.kill();
    }
    this.tally.kills++;
  }

  /** The network of a draw in 0..9 (the first network for most draws: it has the deep reorganisations). */
  networkAt(draw: number): SimNetwork {
    const all = [...this.networks.values()];
    return all[draw < 6 ? 0 : Math.min(1, all.length - 1)] as SimNetwork;
  }

  /** Starts a task on a process; an error it throws, other than its process's death, is a finding. */
  startTask(process: SimProcess, name: string, work: () => Promise<unknown>): boolean {
    const traced = async () => {
      const result = await work();
      if (typeof result === "number") this.trace(`  ${process.name} ${name} done: ${result}`);
      return result;
    };
    return process.startTask(name, traced, (error) => {
      const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      this.taskErrors.push(`${process.name} ${name} threw ${message.slice(0, 300)}`);
      this.trace(`  ${process.name} ${name} threw ${message.slice(0, 120)}`);
    });
  }

  /** Records an invoice the service made, with its deposit address and networks from the store. */
  async noteInvoice(merchant: Merchant, id: string, currency: string, amountMinor: bigint): Promise<void> {
    const row = await this.reads.db
      .selectFrom("invoices")
      .select(["deposit_address", "expires_at"])
      .where("id", "=", id)
      .executeTakeFirstOrThrow();
    const networks = [...this.networks.values()]
      .filter((n) => currency === "USDT" || n.spec.internalTicker === currency)
      .map((n) => n.spec.name);
    this.invoices.push({
      id,
      merchant,
      currency,
      amountMinor,
      address: row.deposit_address as Hex,
      networks,
      expiresAtMs: row.expires_at ? Date.parse(row.expires_at) : Number.POSITIVE_INFINITY,
      refundRequestId: crypto.randomUUID(),
    });
  }

  liveProcesses(): SimProcess[] {
    for (const dead of this.processes.filter((p) => p.dead)) this.processes.splice(this.processes.indexOf(dead), 1);
    return [...this.processes];
  }

  /** One line of the trace: what happened, in order; the trace hash is over all of them. */
  trace(line: string): void {
    if (this.verbose) process.stderr.write(`${line}\n`);
    this.#trace.update(`${line}\n`);
    this.#traceLines.push(line);
    if (this.#traceLines.length > 400) this.#traceLines.shift();
  }

  traceHash(): string {
    return this.#trace.copy().digest("hex").slice(0, 16);
  }

  recentTrace(): readonly string[] {
    return this.#traceLines;
  }

  // --- ProcessHost ---

  logged(line: string): void {
    let entry: { msg?: string; err?: { message?: string; stack?: string } };
    try {
      entry = JSON.parse(line);
    } catch {
      entry = { msg: line };
    }
    // A killed process's unwinding is not a finding.
    if (entry.err?.message?.includes("the process was killed")) return;
    const where = entry.err?.stack?.split("\n").slice(1, 3).join(" ").trim() ?? "";
    const {
      level: _level,
      time: _time,
      pid: _pid,
      hostname: _host,
      msg: _msg,
      err: _err,
      ...fields
    } = entry as Record<string, unknown>;
    this.taskErrors.push(
      `logged error: ${entry.msg ?? ""} ${JSON.stringify(fields)} ${entry.err?.message ?? ""} ${where}`.slice(0, 500),
    );
  }

  park(parked: Omit<Parked, "resume" | "kill">): Promise<void> {
    this.activity++;
    return new Promise((resolve, reject) => {
      this.parked.push({ ...parked, resume: resolve, kill: () => reject(new Killed()) });
    });
  }

  pauses(label: string): boolean {
    this.activity++;
    const p = label === "query" ? this.pausing.query : this.pausing.chain;
    return p > 0 && this.random.chance(p);
  }

  nodeOf(process: SimProcess, rpcUrl: string): ChainClient {
    const network = [...this.networks.values()].find((n) => n.rpcUrl === rpcUrl);
    if (!network) throw new Error(`no simulated node at ${rpcUrl}`);
    return faultyNode(this, process, network);
  }

  async postCallback(_post: CallbackPost): Promise<CallbackAnswer> {
    this.activity++;
    if (this.callbackFailure > 0 && this.random.chance(this.callbackFailure)) {
      return { statusCode: 500, error: null, responseBody: "simulated failure", durationMs: 1 };
    }
    return { statusCode: 200, error: null, responseBody: "ok", durationMs: 1 };
  }

  /**
   * Waits until nothing moves without the scheduler: every task paused, finished, or waiting on the
   * clock. SQLite answers synchronously, so a quiet turn of the event loop is enough; PostgreSQL's
   * answers are real I/O, so there a quiet turn must also outlast a short real wait.
   */
  async settle(): Promise<void> {
    let seen = -1;
    for (let round = 0; round < 100_000; round++) {
      await new Promise((resolve) => setImmediate(resolve));
      if (this.activity !== seen) {
        seen = this.activity;
        continue;
      }
      // A quiet turn. Real I/O may still be under way: a module loaded for the first time (waited
      // for until it is done), or PostgreSQL's answers (its sockets are always open: a quiet turn
      // must then also outlast a short real wait).
      if (this.store.dialect === "postgres") {
        await realDelay(2);
        if (this.activity === seen) return;
      } else if (realIoUnderWay()) await realDelay(1);
      else return;
    }
    throw new Error("the simulation never settled");
  }

  /** Resumes one paused await (a hang first lets the client's timeout pass). */
  async resume(index: number): Promise<string> {
    const [parked] = this.parked.splice(index, 1);
    if (!parked) return "nothing";
    this.activity++;
    // A process that died at a query since it paused: its other awaits end too.
    if (parked.process.dead) parked.kill();
    else {
      if (parked.label === "hang") this.clock.tick(HANG_MS);
      parked.resume();
    }
    await this.settle();
    return `${parked.process.name} ${parked.label}`;
  }

  async close(): Promise<void> {
    for (const process of [...this.processes]) this.kill(process);
    await this.settle();
    await this.store.close();
    if (this.reads !== this.store) await this.reads.close();
  }
}

/** Resources of the process that are not real I/O the simulation waits for: its own output, immediates, threads. */
const NOT_IO = new Set([
  "PipeWrap",
  "TTYWrap",
  "Immediate",
  "Timeout",
  "MessagePort",
  "Worker",
  "CloseReq",
  "FileHandle",
]);

function realIoUnderWay(): boolean {
  return process.getActiveResourcesInfo().some((resource) => !NOT_IO.has(resource));
}

let wallet: Wallet | null = null;

/** The phrase's keys are derived once per runner (PBKDF2 costs 80 ms); every seed's processes share them. */
function walletOf(): Wallet {
  wallet ??= hdWallet(SIMULATION_MNEMONIC);
  return wallet;
}

type Method = keyof ChainClient;

/**
 * The node of `network` as `process` reaches it: each call is an await where the process may
 * pause or die, before it reaches the node and after the answer, and may meet the node's faults.
 */
function faultyNode(world: World, process: SimProcess, network: SimNetwork): ChainClient {
  const node = network.chain.client();
  const call =
    <M extends Method>(method: M) =>
    async (...args: Parameters<ChainClient[M]>): Promise<Awaited<ReturnType<ChainClient[M]>>> => {
      await process.await(`chain:${method}`);
      const faults = network.faults;
      if (faults.unreachable > 0 && world.random.chance(faults.unreachable)) {
        return err("node_unreachable", "simulated: no answer") as Awaited<ReturnType<ChainClient[M]>>;
      }
      if (faults.hang > 0 && world.random.chance(faults.hang)) {
        await world.park({ process, label: "hang" });
        if (process.dead) throw new Killed();
        return err("node_timeout", "the node did not answer in time") as Awaited<ReturnType<ChainClient[M]>>;
      }
      const answer = await answerOf(world, network, node, method, args);
      await process.await(`chain:${method}:answer`);
      return answer as Awaited<ReturnType<ChainClient[M]>>;
    };
  return {
    chainId: call("chainId"),
    headBlockNumber: call("headBlockNumber"),
    block: call("block"),
    transferLogs: call("transferLogs"),
    balance: call("balance"),
    code: call("code"),
    tokenBalance: call("tokenBalance"),
    nonce: call("nonce"),
    fees: call("fees"),
    estimateGas: call("estimateGas"),
    call: call("call"),
    sendRawTransaction: call("sendRawTransaction"),
    receipt: call("receipt"),
  };
}

/** The node's answer, through the faults that change what it answers (a stalled head, a lost broadcast, a late receipt). */
async function answerOf(
  world: World,
  network: SimNetwork,
  node: ChainClient,
  method: Method,
  args: unknown[],
): ChainResult<unknown> {
  const faults = network.faults;
  const r = world.random;
  if (method === "headBlockNumber" && faults.stalledHead !== null) return ok(faults.stalledHead);
  if (method === "sendRawTransaction") {
    const raw = args[0] as Hex;
    if (faults.refuse > 0 && r.chance(faults.refuse)) return err("node_error", "simulated: broadcast refused");
    if (faults.lose > 0 && r.chance(faults.lose)) {
      world.trace(`  lost broadcast ${keccak256(raw).slice(0, 10)} on ${network.spec.name}`);
      return ok(keccak256(raw));
    }
    const sent = await node.sendRawTransaction(raw);
    if (faults.answerLost > 0 && r.chance(faults.answerLost)) return err("node_timeout", "simulated: answer lost");
    return sent;
  }
  const answer = await (node[method] as (...a: unknown[]) => ChainResult<unknown>)(...args);
  if (method === "receipt" && faults.receiptLagBlocks > 0 && answer.ok && answer.value !== null) {
    const depth = network.chain.headNumber() - (answer.value as ChainReceipt).blockNumber + 1n;
    if (depth <= BigInt(faults.receiptLagBlocks)) return ok(null);
  }
  return answer;
}
