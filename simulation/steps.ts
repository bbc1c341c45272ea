// What can happen in one step of a seed's run: a paused await resumes, a worker or a request starts, a payer pays, a block is mined or reorganised, a node or a process fails; each drawn from its own number so a shrunk run keeps its steps' meaning.
import { encodeFunctionData, erc20Abi, type Hex, parseUnits } from "viem";
import { compileTestToken } from "./contracts.ts";
import { Random } from "./random.ts";
import { admin, asMerchant, signed } from "./requests.ts";
import type { SimInvoice, SimNetwork, World } from "./world.ts";

/** The workers a process runs, by their loop's name in src/workers/index.ts. */
export const WORKERS = ["scanner", "chainPayouts", "screening", "expiry", "callbacks", "payouts"] as const;
/** How often a worker step starts each: the rails' own (scans, the outbox) most. */
const WORKER_DRAWS: readonly (typeof WORKERS)[number][] = [...WORKERS, "scanner", "scanner", "scanner", "chainPayouts"];

const TOKEN_DECIMALS = 6;

type StepKind =
  | "resume"
  | "worker"
  | "invoice"
  | "pay"
  | "withdraw"
  | "refund"
  | "resolve"
  | "recover"
  | "mine"
  | "advance"
  | "reorg"
  | "stall"
  | "drop"
  | "kill"
  | "restart"
  | "blacklist"
  | "freeze";

/** How often each kind of step is drawn during the fault phase (out of the sum). */
const WEIGHTS: readonly [StepKind, number][] = [
  ["resume", 34],
  ["worker", 22],
  ["invoice", 6],
  ["pay", 9],
  ["withdraw", 6],
  ["refund", 2],
  ["resolve", 1],
  ["mine", 14],
  ["advance", 3],
  ["reorg", 4],
  ["stall", 1],
  ["drop", 1],
  ["kill", 1],
  ["restart", 1],
  ["blacklist", 4],
  ["freeze", 4],
  ["recover", 1],
];
const TOTAL_WEIGHT = WEIGHTS.reduce((sum, [, w]) => sum + w, 0);

/** A request id (UUID v4 form) from the step's draw. */
export function uuidOf(r: Random): string {
  const h = Buffer.from(r.fill(new Uint8Array(16))).toString("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20)}`;
}

function kindOf(r: Random): StepKind {
  let roll = r.int(0, TOTAL_WEIGHT - 1);
  for (const [kind, weight] of WEIGHTS) {
    if (roll < weight) return kind;
    roll -= weight;
  }
  return "resume";
}

/** Runs the step drawn from `draw`; answers the line the trace records. */
export async function runStep(world: World, draw: number): Promise<string> {
  const r = new Random(draw);
  const kind = kindOf(r);
  world.tally.steps++;
  for (const process of world.processes) if (process.frozenSteps > 0) process.frozenSteps--;
  if (world.verbose) process.stderr.write(`[${kind}]\n`);
  const line = await STEPS[kind](world, r);
  await world.settle();
  return line;
}

const STEPS: Record<StepKind, (world: World, r: Random) => Promise<string>> = {
  resume: async (world, r) => {
    const resumable = world.parked.filter((p) => p.process.frozenSteps === 0);
    if (resumable.length === 0) return "resume: none paused";
    return `resume ${await world.resume(world.parked.indexOf(r.pick(resumable)))}`;
  },
  worker: async (world, r) => startWorker(world, r),
  invoice: async (world, r) => createInvoice(world, r),
  pay: async (world, r) => pay(world, r),
  withdraw: async (world, r) => withdraw(world, r),
  refund: async (world, r) => refund(world, r),
  resolve: async (world, r) => resolve(world, r),
  recover: async (world, r) => recover(world, r),
  mine: async (world, r) => mine(world, world.networkAt(r.int(0, 9)), r),
  advance: async (world, r) => {
    const ms = r.int(1, 120) * 1000;
    world.clock.tick(ms);
    return `advance ${ms / 1000}s`;
  },
  reorg: async (world, r) => reorganise(world, world.networkAt(r.int(0, 9)), r),
  stall: async (world, r) => {
    const network = world.networkAt(r.int(0, 9));
    const faults = network.faults;
    faults.stalledHead = faults.stalledHead === null ? network.chain.headNumber() : null;
    return `stall ${network.spec.name} ${faults.stalledHead === null ? "ends" : `at ${faults.stalledHead}`}`;
  },
  drop: async (world, r) => {
    const network = world.networkAt(r.int(0, 9));
    const pending = network.chain.pendingHashes();
    if (pending.length === 0) return `drop: nothing pending on ${network.spec.name}`;
    const hash = r.pick(pending);
    network.chain.dropPending(hash);
    return `drop ${hash.slice(0, 10)} from ${network.spec.name}'s pool`;
  },
  kill: async (world, r) => {
    const live = world.liveProcesses();
    if (live.length === 0) return "kill: none alive";
    const process = r.pick(live);
    if (r.chance(0.5)) {
      // It dies inside what it does next: at its k-th query, often in a transaction.
      process.dieAtQuery = r.int(1, 40);
      world.tally.kills++;
      return `${process.name} dies at its ${process.dieAtQuery}th query from now`;
    }
    world.kill(process);
    // Most crashed processes are restarted at once by their supervisor; some stay down a while.
    if (r.chance(0.6)) return `kill ${process.name}, start ${(await world.bootProcess()) ?? "deferred"}`;
    return `kill ${process.name}`;
  },
  blacklist: async (world, r) => blacklist(world, r),
  freeze: async (world, r) => {
    // A process stalls (a long collection, a paused VM) past its leases while the clock runs on:
    // its paused awaits wait that many steps, and whatever it held is another's to take.
    const live = world.liveProcesses();
    if (live.length === 0) return "freeze: none alive";
    const process = r.pick(live);
    process.frozenSteps = r.int(5, 30);
    const ms = r.int(31, 90) * 1000;
    world.clock.tick(ms);
    return `${process.name} stalls ${process.frozenSteps} steps; the clock moves ${ms / 1000}s`;
  },
  restart: async (world) => {
    if (world.liveProcesses().length >= 2) return "restart: two alive";
    return `start ${(await world.bootProcess()) ?? "deferred (a paused transaction holds the write lock)"}`;
  },
};

function startWorker(world: World, r: Random): string {
  const live = world.liveProcesses();
  if (live.length === 0) return "worker: none alive";
  const process = r.pick(live);
  const name = r.pick(WORKER_DRAWS);
  const loop = process.workers.loops[name];
  if (!loop) return `worker: ${process.name} has no ${name}`;
  const started = world.startTask(process, name, () => loop.runOnce());
  return `${process.name} ${started ? "starts" : "already runs"} ${name}`;
}

/** A request on a live process, run as one of its tasks (it may pause and die like any other). */
function request(
  world: World,
  r: Random,
  what: string,
  work: (p: (typeof world.processes)[number]) => Promise<string>,
) {
  const live = world.liveProcesses();
  if (live.length === 0) return `${what}: none alive`;
  const process = r.pick(live);
  world.tally.requests++;
  const id = `request-${world.tally.requests}`;
  world.startTask(process, id, async () => {
    const answer = await work(process);
    // A process that died while it answered sends nothing: its client sees no answer.
    world.trace(`  ${id} ${what}: ${process.dead ? "no answer (the process died)" : answer}`);
  });
  return `${process.name} ${id} ${what}`;
}

function createInvoice(world: World, r: Random): string {
  const merchant = r.pick(world.merchants);
  const currency = r.pick(["USDT", "USDT_ERC20", "USDT_BASE"]);
  const amount = r.pick(["10", "25.5", "100", "7"]);
  const lifetimeMs = r.int(2, 20) * 60_000;
  return request(world, r, `invoice ${currency} ${amount}`, async (process) => {
    const answer = await asMerchant(process, merchant.apiKey, "POST", "/public/v1/invoices/create", {
      currency,
      amount,
      // An address, not a name: the simulation resolves nothing (a DNS lookup is real I/O).
      callbackUrl: "https://93.184.216.34/callbacks",
      expiresAt: new Date(Date.now() + lifetimeMs).toISOString(),
    });
    if (answer.status !== 200) return `${answer.status} ${answer.body?.code ?? ""}`;
    await world.noteInvoice(merchant, answer.body.id, currency, parseUnits(answer.body.final_amount, TOKEN_DECIMALS));
    return `200 ${answer.body.id}`;
  });
}

/** A payer's transfer to an invoice's address: exact, partial, over, or on a network the invoice does not take. */
async function pay(world: World, r: Random): Promise<string> {
  if (world.invoices.length === 0) return "pay: no invoice";
  const invoice = r.pick(world.invoices);
  const wrongNetwork = r.chance(0.1);
  const names = wrongNetwork ? [...world.networks.keys()] : invoice.networks;
  const network = world.networks.get(r.pick(names));
  if (!network) return "pay: no network";
  const variant = r.pick(["exact", "exact", "partial", "over"] as const);
  const amount = amountFor(invoice, variant);
  const payer = r.pick(world.payers);
  const data = encodeFunctionData({ abi: erc20Abi, functionName: "transfer", args: [invoice.address, amount] });
  try {
    const hash = await network.chain.send(payer, { to: network.token, data });
    world.tally.transfers++;
    return `pay ${invoice.id} ${variant} ${amount} on ${network.spec.name} ${hash.slice(0, 10)}`;
  } catch (error) {
    return `pay refused: ${(error as Error).message.slice(0, 80)}`;
  }
}

function amountFor(invoice: SimInvoice, variant: "exact" | "partial" | "over"): bigint {
  if (variant === "partial") return invoice.amountMinor / 2n;
  if (variant === "over") return invoice.amountMinor + invoice.amountMinor / 10n;
  return invoice.amountMinor;
}

function withdraw(world: World, r: Random): string {
  const merchant = r.pick(world.merchants);
  const [ticker, method] = r.pick([...merchant.methods.entries()]);
  // A retry reuses an earlier request id and body (safe retries): it must not pay twice.
  const retry = merchant.withdrawals.length > 0 && r.chance(0.25);
  const sent = retry
    ? r.pick(merchant.withdrawals)
    : {
        requestId: uuidOf(r),
        body: { currency: ticker, amount: r.pick(["10", "12", "30"]), withdrawalMethodId: method.id },
      };
  if (!retry) merchant.withdrawals.push(sent);
  return request(world, r, `withdraw ${sent.requestId}${retry ? " (retry)" : ""}`, async (process) => {
    const answer = await signed(process, merchant, { path: "/public/v1/withdrawals/create", ...sent });
    return `${answer.status} ${answer.body?.code ?? answer.body?.request?.status ?? ""}`;
  });
}

function refund(world: World, r: Random): string {
  if (world.invoices.length === 0) return "refund: no invoice";
  const invoice = r.pick(world.invoices);
  const body = { invoiceId: invoice.id, withdrawToSameAddress: true };
  return request(world, r, `refund ${invoice.id}`, async (process) => {
    const answer = await signed(process, invoice.merchant, {
      path: "/public/v1/refunds/refundCrypto",
      requestId: invoice.refundRequestId,
      body,
    });
    return `${answer.status} ${answer.body?.code ?? answer.body?.request?.status ?? ""}`;
  });
}

/** The operator resolves an invoice's late or odd payments: accepts them, or sends them back to a payer. */
function resolve(world: World, r: Random): string {
  if (world.invoices.length === 0) return "resolve: no invoice";
  const invoice = r.pick(world.invoices);
  const body = r.chance(0.5) ? { action: "accept" } : { action: "refund", address: r.pick(world.payers).address };
  return request(world, r, `resolve ${invoice.id} ${body.action}`, async (process) => {
    const answer = await admin(process, "POST", `/invoices/${invoice.id}/resolve`, body);
    return `${answer.status} ${answer.body?.code ?? answer.body?.status ?? ""}`;
  });
}

/**
 * The operator recovers a stray payment (a transfer on a network its invoice does not take): the
 * next flush of that network moves the forwarder's balance to the hot wallet, into the ledger once.
 */
async function recover(world: World, r: Random): Promise<string> {
  const strays = await world.reads.db
    .selectFrom("stray_payments")
    .select(["network", "tx_id"])
    .orderBy("network")
    .orderBy("tx_id")
    .limit(100)
    .execute();
  if (strays.length === 0) return "recover: no stray";
  const stray = r.pick(strays);
  const id = encodeURIComponent(`${stray.network}:${stray.tx_id}`);
  return request(world, r, `recover ${stray.network}:${stray.tx_id.slice(0, 10)}`, async (process) => {
    const answer = await admin(process, "POST", `/stray-payments/${id}/recover`);
    return `${answer.status} ${answer.body?.code ?? answer.body?.state ?? ""}`;
  });
}

/**
 * The token's issuer blocks (or unblocks) a merchant's withdrawal address, as USDT's blacklist does:
 * a payout to it then reverts, or its gas estimate does, and must fail and credit the merchant back.
 */
async function blacklist(world: World, r: Random): Promise<string> {
  const network = world.networkAt(r.int(0, 9));
  const merchant = r.pick(world.merchants);
  const method = merchant.methods.get(network.spec.internalTicker);
  if (!method) return "blacklist: no method";
  const blocked = !world.blocked.has(method.address);
  if (blocked) world.blocked.add(method.address);
  else world.blocked.delete(method.address);
  const data = encodeFunctionData({
    abi: compileTestToken().abi,
    functionName: "setBlocked",
    args: [method.address, blocked],
  });
  await network.chain.send(world.tokenOwner, { to: network.token, data });
  return `the token on ${network.spec.name} ${blocked ? "blocks" : "unblocks"} ${method.address.slice(0, 10)}`;
}

/** Mines one block after 1 to 12 simulated seconds; a few pending transactions may wait for a later one. */
export async function mine(world: World, network: SimNetwork, r: Random): Promise<string> {
  world.clock.tick(r.int(1, 12) * 1000);
  const pending = network.chain.pendingHashes();
  const exclude = new Set<Hex>(pending.filter(() => r.chance(0.1)));
  const block = await network.chain.mine(world.nowSeconds(), { exclude });
  world.tally.blocks++;
  return `mine ${network.spec.name} #${block.number} ${block.hash.slice(0, 10)} (${pending.length - exclude.size} of ${pending.length} pending)`;
}

/** Replaces the last 1..maxReorgDepth blocks with as many plus one, some of their transactions left pending. */
/**
 * How deep a reorganisation goes: most of the time just deep enough to take away the latest block
 * with a payer's transfer that the service has already scanned (where a scanner that believed it too
 * soon, or never looked back, is caught), else any depth.
 */
async function depthOf(world: World, network: SimNetwork, r: Random): Promise<number> {
  const head = network.chain.headNumber();
  const row = await world.reads.db
    .selectFrom("networks")
    .select("scanned_block")
    .where("name", "=", network.spec.name)
    .executeTakeFirst();
  const scanned = row?.scanned_block === null || row?.scanned_block === undefined ? -1n : BigInt(row.scanned_block);
  const payers = new Set(world.payers.map((p) => p.address.toLowerCase()));
  const latest = network.chain
    .minedTransactions()
    .filter((t) => payers.has(t.from.toLowerCase()) && t.blockNumber <= scanned)
    .at(-1);
  const toPayment = latest === undefined ? null : Number(head - latest.blockNumber) + 1;
  const depth =
    toPayment !== null && toPayment <= network.spec.maxReorgDepth && r.chance(0.7)
      ? toPayment
      : r.int(1, network.spec.maxReorgDepth);
  world.trace(`  ${network.spec.name} head ${head}, scanned to ${scanned}`);
  return Math.min(depth, Number(head) - 1);
}

async function reorganise(world: World, network: SimNetwork, r: Random): Promise<string> {
  const depth = await depthOf(world, network, r);
  if (depth < 1) return `reorg: ${network.spec.name} too short`;
  const readmitted = await network.chain.rewind(depth);
  world.tally.reorgs++;
  // The new fork's nodes never saw some of the old fork's transactions: a payer's is then gone for
  // good (as if spent again elsewhere), the hot wallet's must be broadcast again by the service.
  const payers = new Set(world.payers.map((p) => p.address.toLowerCase()));
  const forgotten = readmitted.filter((hash) =>
    r.chance(payers.has(network.chain.pendingSender(hash) ?? "") ? 0.7 : 0.3),
  );
  for (const hash of forgotten) network.chain.dropPending(hash);
  const recorded = await world.reads.db
    .selectFrom("invoice_payments")
    .select(["tx_hash", "confirmed"])
    .where("tx_hash", "in", forgotten.length > 0 ? forgotten.map((h) => h.toLowerCase()) : ["-"])
    .execute();
  for (let i = 0; i <= depth; i++) await mine(world, network, r);
  const seen = recorded.map((p) => `${String(p.tx_hash).slice(0, 10)}${p.confirmed ? " confirmed" : ""}`).join(", ");
  return `reorg ${network.spec.name} depth ${depth} (${readmitted.length - forgotten.length} transactions back in the pool, ${forgotten.length} gone${seen ? `, payments recorded: ${seen}` : ""})`;
}
