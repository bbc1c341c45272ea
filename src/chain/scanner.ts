// The deposit scanner of one network (product §12): follows the chain block by block (reconcile, fetch and check, apply), records transfers to deposit addresses, confirms them at depth, and undoes reorganisations.
import type { ChainBlock, ChainClient, Hex, TransferLog } from "../domain/chain.ts";
import type { Currency } from "../domain/currencies.ts";
import { countedForInvoice, inUnitsOf, isFiat, precisionOf, symbolOf } from "../domain/currencies.ts";
import { guardOn } from "../domain/guards.ts";
import { movement, SYSTEM_ACCOUNTS } from "../domain/ledger.ts";
import { assert } from "../domain/result.ts";
import {
  type DepositInvoice,
  depositAwaited,
  dropPaymentsAfter,
  invoicesByDepositAddress,
  type UnconfirmedChainPayment,
  unconfirmedUpTo,
} from "../store/chainPayments.ts";
import {
  anyDepositAddressIn,
  type CustomerDeposits,
  depositAddressesAt,
  unconfirmedDepositsUpTo,
} from "../store/depositAddresses.ts";
import { queueFlushDeposit } from "../store/flushes.ts";
import { type Invoice, lockInvoice } from "../store/invoices.ts";
import { postMovement } from "../store/ledger.ts";
import {
  advanceCheckpoint,
  fenceScanLease,
  type Network,
  recordNodeState,
  rewindCheckpoint,
  type ScanLease,
  ScanLeaseLost,
  scannedHashes,
} from "../store/networks.ts";
import {
  type ChainPaymentEvent,
  type ChainPaymentOutcome,
  chainTxId,
  type SenderScreening,
} from "../store/settlement.ts";
import type { Store, Tx } from "../store/store.ts";
import { dropStrayPaymentsAfter, recordStrayPayment } from "../store/strayPayments.ts";
import { createSweepFor } from "../store/sweeps.ts";
import { readPassCatalog } from "./passReads.ts";

/** Blocks read per batch: bounds one batch's node calls, memory and transaction. */
export const SCAN_BATCH_BLOCKS = 50;
/** Confirmations handled per batch. */
export const CONFIRM_BATCH = 200;
/** Block hashes kept beyond `confirmations`, to find where a reorganisation forked. */
export const EXTRA_HASHES_KEPT = 64n;

export interface ScanOutcome {
  /** Blocks scanned in this batch. */
  blocks: number;
  /** Payments recorded, confirmed or dropped. */
  payments: number;
  /** Set when the batch stopped on the node: nothing was credited from it. */
  nodeError: string | null;
  head: bigint | null;
  /** Whether block bodies were read (a native-coin invoice waits on this network); else headers and logs only. */
  readBodies: boolean;
}

class NodeFailure extends Error {}

/**
 * The depth at which a payment counts: the network's confirmations. Guard confirmation-depth
 * (src/domain/guards.ts): off, a payment counts in the block it is mined in.
 */
function countingDepth(network: Network): bigint {
  return guardOn("confirmation-depth") ? BigInt(network.confirmations) : 1n;
}

/**
 * Whether the node's chain still has the block stored at that height (its hash, or its child's
 * parent hash, is the stored one). Guard reorg-rewind (src/domain/guards.ts): off, the stored blocks
 * are believed, so nothing is rewound and the scanner reads on from its checkpoint.
 */
function stillOnChain(seen: string | null | undefined, stored: string): boolean {
  return seen === stored || !guardOn("reorg-rewind");
}

function must<T>(answer: { ok: true; value: T } | { ok: false; error: string; detail?: string }, what: string): T {
  if (!answer.ok) throw new NodeFailure(`${answer.error}: ${what}${answer.detail ? ` (${answer.detail})` : ""}`);
  return answer.value;
}

/** The catalog entries of a network: its native coin (no contract) and its tokens by contract; `all` the whole catalog. */
function currenciesOf(network: string, catalog: readonly Currency[]) {
  const onNetwork = catalog.filter((c) => c.network === network && !isFiat(c));
  return {
    all: catalog,
    native: onNetwork.find((c) => c.contractAddress === null) ?? null,
    byContract: new Map(
      onNetwork.filter((c) => c.contractAddress !== null).map((c) => [(c.contractAddress as string).toLowerCase(), c]),
    ),
  };
}

interface Deposit {
  to: string;
  from: string;
  contract: string | null;
  amountMinor: bigint;
  txHash: Hex;
  logIndex: number | null;
  block: ChainBlock;
}

/**
 * One batch of the scanner of `network`, which the caller holds the lease of. Every node answer is
 * checked before anything is written (chain id, block hashes): a node that fails or lies stops the
 * batch, records why, and credits nothing.
 */
export async function scanNetwork(
  store: Store,
  network: Network,
  client: ChainClient,
  settle: SettleChainPayment,
  lease: ScanLease | null = null,
  { hooks = {}, screen = unscreened, now = () => new Date(), deposits = noCustomerDeposits, catalog }: ScanOptions = {},
): Promise<ScanOutcome> {
  // Every write of the batch first checks the lease in its own transaction (product §19): a batch
  // that outlived its lease (a paused process, a slow node) writes nothing (ScanLeaseLost).
  const fenced: Fenced = (work) =>
    store.transaction(async (tx) => {
      const at = now().toISOString();
      if (lease !== null) await fenceScanLease(tx, network.name, lease, at);
      return work(tx, at);
    });
  try {
    // The worker's pass hands its one catalog read (passReads.ts); a lone call reads it once here.
    const entries = catalog ?? (await readPassCatalog(store));
    return await scan(store, network, client, settle, fenced, { hooks, screen, now, deposits, catalog: entries });
  } catch (error) {
    if (!(error instanceof NodeFailure)) throw error;
    await fenced((tx, at) => recordNodeState(tx, network.name, { nodeError: error.message }, at));
    return { blocks: 0, payments: 0, nodeError: error.message, head: null, readBodies: false };
  }
}

/** A write of the batch: its own transaction, after the lease check, at the moment of the scanner's clock it began. */
type Fenced = <T>(work: (tx: Tx, at: string) => Promise<T>) => Promise<T>;

/** A test's hook into a scan batch (main.ts asks for it in SCANNER_TEST_PAUSE_AT, src/workers/testHooks.ts; never in production). */
export interface ScanHooks {
  /** Called when the batch has read blocks with transfers and is about to record them. */
  beforeRecord?: () => void;
}

/** How the scanner learns a sender's screening without waiting on a provider (app/screening.ts screenSenderNow). */
export type ScreenSender = (address: string) => Promise<SenderScreening>;

/**
 * How the scanner records a payment it saw or confirmed, for its locked invoice, in the batch's
 * transaction: the use case app/recordChainPayment.ts, handed in by the worker (chain code never
 * imports a use case). Answers what it did; all but `unchanged` count as the batch's work.
 */
export type SettleChainPayment = (
  tx: Tx,
  invoice: Invoice,
  event: ChainPaymentEvent,
  now: string,
) => Promise<ChainPaymentOutcome>;

/** Without a screening function every new payment waits for the screening worker: never settled unscreened. */
const unscreened: ScreenSender = async () => "pending";

/** What the worker hands a scan besides the store: its test hooks, its screening, its one clock and customers' deposits (each has a default for tests). */
export interface ScanOptions {
  hooks?: ScanHooks;
  screen?: ScreenSender;
  now?: () => Date;
  /** How customers' deposits are recorded and settled (product §30); absent: transfers to their addresses are not read. */
  deposits?: CustomerDeposits;
  /** The currency catalog the pass read (src/chain/passReads.ts); absent: read once by this batch. */
  catalog?: readonly Currency[];
}

/** Without the port, customers' addresses are not watched (tests of invoices alone). */
const noCustomerDeposits: CustomerDeposits = {
  record: async () => false,
  confirm: async () => false,
  reverse: async () => 0,
};

/**
 * The senders of the transfers that go to an invoice's deposit address: only those become payments,
 * so only they are screened (a busy token's other transfers would cost a check each). A deposit
 * address given out after this read is screened by the worker (`pending`).
 */
async function paymentSenders(store: Store, deposits: readonly Deposit[]): Promise<string[]> {
  if (deposits.length === 0) return [];
  const tos = deposits.map((d) => d.to);
  const invoices = await invoicesByDepositAddress(store, tos);
  // Customers' addresses too (product §30): their transfers become deposits, screened alike.
  const customers = await depositAddressesAt(store, tos);
  const addresses = new Set([...invoices.map((i) => i.depositAddress), ...customers.map((c) => c.address)]);
  return deposits.filter((d) => addresses.has(d.to)).map((d) => d.from);
}

/** Each distinct sender once. */
async function screenSenders(senders: readonly string[], screen: ScreenSender): Promise<Map<string, SenderScreening>> {
  const verdicts = new Map<string, SenderScreening>();
  for (const from of senders) if (!verdicts.has(from)) verdicts.set(from, await screen(from));
  return verdicts;
}

/** How long after expiry a native-coin invoice still makes the scanner read block bodies (late payments). */
export const LATE_NATIVE_WATCH_MS = 24 * 60 * 60 * 1000;

/**
 * One batch in three steps (issue 31): reconcile the checkpoint with the chain (a reorganisation
 * rewinds it), fetch and check the next blocks and transfers (nothing written), apply them in one
 * fenced transaction; then confirm what is deep enough.
 */
async function scan(
  store: Store,
  network: Network,
  client: ChainClient,
  settle: SettleChainPayment,
  fenced: Fenced,
  { hooks, screen, now, deposits, catalog }: Required<ScanOptions>,
): Promise<ScanOutcome> {
  const chainId = must(await client.chainId(), "eth_chainId");
  if (chainId !== network.chainId) {
    throw new NodeFailure(`wrong_chain_id: the node is on chain ${chainId}, not ${network.chainId}`);
  }
  const head = must(await client.headBlockNumber(), "eth_blockNumber");
  const position = await reconcile(store, network, client, head, fenced, deposits);
  let payments = position.dropped;
  let blocks = 0;
  let readBodies = false;
  if (position.from <= head) {
    // Native-coin invoices expired within the late watch still have their deposits looked for.
    const lateSince = new Date(now().getTime() - LATE_NATIVE_WATCH_MS).toISOString();
    const batch = await fetchBatch(store, network, client, { ...position, lateSince, catalog }, head);
    readBodies = batch.readBodies;
    if (batch.blocks.length > 0) {
      // Each payment's sender is screened before it is recorded, outside the transaction (product §21).
      const screening = await screenSenders(await paymentSenders(store, batch.deposits), screen);
      if (batch.deposits.length > 0) hooks.beforeRecord?.();
      const applied = { ...batch, screening, from: position.checkpoint };
      payments += await applyBatch(network, head, applied, { settle, deposits }, fenced);
      blocks = batch.blocks.length;
    }
  }
  payments += await confirmDeep(network, head, { settle, deposits, catalog }, fenced);
  return { blocks, payments, nodeError: null, head, readBodies };
}

interface Position {
  /** The next block to read. */
  from: bigint;
  /** The block the next one read must follow: the checkpoint, or after a rewind the fork block. */
  checkpoint: { number: bigint | null; hash: string | null };
  /** Payments a reorganisation dropped. */
  dropped: number;
}

/** Reconcile: when the block at the checkpoint is no longer the one scanned (a reorganisation), rewind to the fork. */
async function reconcile(
  store: Store,
  network: Network,
  client: ChainClient,
  head: bigint,
  fenced: Fenced,
  deposits: CustomerDeposits,
): Promise<Position> {
  let from = network.scannedBlock === null ? head - BigInt(network.confirmations) + 1n : network.scannedBlock + 1n;
  if (from < 0n) from = 0n;
  const checkpoint = { number: network.scannedBlock, hash: network.scannedHash };
  if (network.scannedBlock === null || network.scannedHash === null) return { from, checkpoint, dropped: 0 };
  const tip = must(await client.block(network.scannedBlock, { withTransactions: false }), "eth_getBlockByNumber");
  if (stillOnChain(tip?.hash, network.scannedHash)) return { from, checkpoint, dropped: 0 };
  const fork = await findFork(store, network, client);
  const dropped = await fenced(async (tx, at) => {
    const touched = await dropPaymentsAfter(tx, network.name, fork.number, at);
    const reversed = await deposits.reverse(tx, network.name, fork.number, at);
    await dropStrayPaymentsAfter(tx, network.name, fork.number);
    await rewindCheckpoint(tx, network.name, fork.number < 0n ? null : fork.number, fork.hash);
    return touched.length + reversed;
  });
  return {
    from: fork.number + 1n,
    checkpoint: { number: fork.number < 0n ? null : fork.number, hash: fork.hash },
    dropped,
  };
}

interface Batch {
  all: readonly Currency[];
  blocks: ChainBlock[];
  deposits: Deposit[];
  native: Currency | null;
  byContract: Map<string, Currency>;
  readBodies: boolean;
}

/**
 * Fetch and check: the next blocks (headers only unless a native-coin invoice waits on this
 * network) and the catalog tokens' Transfer logs over them (eth_getLogs filtered by contract).
 * Every answer is checked to form one chain following the checkpoint; nothing is written.
 */
async function fetchBatch(
  store: Store,
  network: Network,
  client: ChainClient,
  position: Position & { lateSince: string; catalog: readonly Currency[] },
  head: bigint,
): Promise<Batch> {
  const last = position.from + BigInt(SCAN_BATCH_BLOCKS) - 1n;
  const to = last < head ? last : head;
  const { all, native, byContract } = currenciesOf(network.name, position.catalog);
  const readBodies =
    native !== null &&
    ((await store.transaction((tx) => depositAwaited(tx, [symbolOf(native)], position.lateSince))) ||
      (await anyDepositAddressIn(store, symbolOf(native))));
  // Asked together (one JSON-RPC batch over HTTP, at most SCAN_BATCH_BLOCKS calls), checked in order.
  const numbers: bigint[] = [];
  for (let n = position.from; n <= to; n++) numbers.push(n);
  const answers = await Promise.all(numbers.map((n) => client.block(n, { withTransactions: readBodies })));
  const blocks: ChainBlock[] = [];
  for (const answer of answers) {
    const block = must(answer, "eth_getBlockByNumber");
    if (block === null) break; // the node's head moved back meanwhile: scan the rest next time
    const previous = blocks[blocks.length - 1];
    if (previous && block.parentHash !== previous.hash) {
      throw new NodeFailure("node_error: blocks changed while being read (a reorganisation in progress)");
    }
    blocks.push(block);
  }
  const first = blocks[0];
  const final = blocks[blocks.length - 1];
  if (first === undefined || final === undefined) return { all, blocks, deposits: [], native, byContract, readBodies };
  const { checkpoint } = position;
  // After a rewind too: a chain that moved again between finding the fork and reading on is not taken.
  if (checkpoint.number !== null && checkpoint.hash !== null && first.number === checkpoint.number + 1n) {
    if (!stillOnChain(first.parentHash, checkpoint.hash)) {
      throw new NodeFailure("node_error: the next block does not follow the checkpoint (a reorganisation in progress)");
    }
  }
  const logs: TransferLog[] =
    byContract.size === 0
      ? []
      : must(
          await client.transferLogs(
            [...byContract.values()].map((c) => c.contractAddress as Hex),
            first.number,
            final.number,
          ),
          "eth_getLogs",
        );
  const deposits = readBodies ? nativeDeposits(blocks) : [];
  deposits.push(...tokenDeposits(blocks, logs));
  return { all, blocks, deposits, native, byContract, readBodies };
}

function nativeDeposits(blocks: readonly ChainBlock[]): Deposit[] {
  const deposits: Deposit[] = [];
  for (const block of blocks) {
    for (const t of block.transactions) {
      if (t.to === null || t.value <= 0n) continue;
      deposits.push({
        to: t.to,
        from: t.from,
        contract: null,
        amountMinor: t.value,
        txHash: t.hash,
        logIndex: null,
        block,
      });
    }
  }
  return deposits;
}

function tokenDeposits(blocks: readonly ChainBlock[], logs: readonly TransferLog[]): Deposit[] {
  const byNumber = new Map(blocks.map((b) => [b.number, b]));
  const deposits: Deposit[] = [];
  for (const log of logs) {
    const block = byNumber.get(log.blockNumber);
    // A log from a block other than the one read: the node changed its mind mid-batch.
    if (!block || block.hash !== log.blockHash) {
      throw new NodeFailure("node_error: logs and blocks disagree (a reorganisation in progress)");
    }
    if (log.value <= 0n) continue;
    deposits.push({
      to: log.to,
      from: log.from,
      contract: log.contract.toLowerCase(),
      amountMinor: log.value,
      txHash: log.transactionHash,
      logIndex: log.logIndex,
      block,
    });
  }
  return deposits;
}

/**
 * The checkpoint the batch follows is still the stored one: a pass that held the lease before this one
 * may have committed a batch after this one read its position (its transaction open across the
 * takeover). Found by the simulation (docs/simulation.md): written over, that pass's blocks were
 * forgotten and its payments from a fork reorganised away were confirmed later.
 */
async function expectCheckpoint(tx: Tx, name: string, from: Position["checkpoint"]): Promise<void> {
  // The lease's other half (guard lease-token, src/domain/guards.ts): the position is the pass's fencing token.
  if (!guardOn("lease-token")) return;
  const stored = await tx.db
    .selectFrom("networks")
    .select(["scanned_block", "scanned_hash"])
    .where("name", "=", name)
    .executeTakeFirst();
  const storedBlock = stored?.scanned_block === null || stored === undefined ? null : BigInt(stored.scanned_block);
  if (storedBlock !== from.number || (stored?.scanned_hash ?? null) !== from.hash) {
    throw new ScanLeaseLost(`the checkpoint of ${name} moved since this pass read it: the batch wrote nothing`);
  }
}

/** Apply: records the batch's payments to deposit addresses and moves the checkpoint, in one fenced transaction. */
async function applyBatch(
  network: Network,
  head: bigint,
  batch: Batch & { screening: ReadonlyMap<string, SenderScreening>; from: Position["checkpoint"] },
  { settle, deposits }: { settle: SettleChainPayment; deposits: CustomerDeposits },
  fenced: Fenced,
): Promise<number> {
  const last = batch.blocks[batch.blocks.length - 1] as ChainBlock;
  return fenced(async (tx, now) => {
    await expectCheckpoint(tx, network.name, batch.from);
    let recorded = await recordCustomerTransfers(tx, network, head, batch, deposits, now);
    const invoices = await invoicesByDepositAddress(
      tx,
      batch.deposits.map((d) => d.to),
    );
    const invoiceOf = new Map(invoices.map((i) => [i.depositAddress, i]));
    for (const d of batch.deposits) {
      const target = invoiceOf.get(d.to);
      if (!target) continue;
      const currency = d.contract === null ? batch.native : (batch.byContract.get(d.contract) ?? null);
      if (currency === null) continue;
      // Another currency sent to the address, or another network than an internalTicker invoice's, is
      // not this invoice's payment: the operator sees it as stray, it is never credited (docs/evm.md).
      if (!payableOn(target, currency)) {
        await recordStray(tx, network.name, { invoiceId: target.invoiceId }, currency.ticker, d, now);
        continue;
      }
      const { counted, dust } = countedAt(batch.all, target.currency, currency, d.amountMinor);
      if (counted <= 0n) continue;
      const invoice = await lockInvoice(tx, target.invoiceId);
      if (!invoice) continue;
      const event: ChainPaymentEvent = {
        place: {
          network: network.name,
          txHash: d.txHash,
          logIndex: d.logIndex,
          blockNumber: d.block.number,
          blockHash: d.block.hash,
        },
        amountMinor: counted,
        fromAddress: d.from,
        confirmed: head - d.block.number + 1n >= countingDepth(network),
        arrivedAt: new Date(Number(d.block.timestamp) * 1000).toISOString(),
        screening: batch.screening.get(d.from) ?? "pending",
      };
      const outcome = await settle(tx, invoice, event, now);
      if (outcome !== "unchanged") recorded++;
      if (dust > 0n)
        await keepDust(tx, invoice.id, network.name, event.place, currency.ticker, dust, event.confirmed, now);
      // The sweep moves the entry's own coins on this network, in its own units.
      const sweep = { ...event, amountMinor: d.amountMinor };
      if (event.confirmed) await moveToHotWallet(tx, sweep, target, currency, now);
    }
    const keepFrom = last.number - BigInt(network.confirmations) - EXTRA_HASHES_KEPT;
    await advanceCheckpoint(
      tx,
      network.name,
      batch.blocks.map((b) => ({ number: b.number, hash: b.hash, timestamp: b.timestamp })),
      keepFrom,
    );
    return recorded;
  });
}

/**
 * The batch's transfers to customers' addresses (product §30), found with one indexed lookup: each
 * in the address's ticker is a deposit (another currency sent there is not, and is left alone).
 */
async function recordCustomerTransfers(
  tx: Tx,
  network: Network,
  head: bigint,
  batch: Batch & { screening: ReadonlyMap<string, SenderScreening> },
  deposits: CustomerDeposits,
  now: string,
): Promise<number> {
  if (batch.deposits.length === 0 || deposits === noCustomerDeposits) return 0;
  const addresses = await depositAddressesAt(
    tx,
    batch.deposits.map((d) => d.to),
  );
  if (addresses.length === 0) return 0;
  const byAddress = new Map(addresses.map((a) => [a.address, a]));
  let recorded = 0;
  for (const d of batch.deposits) {
    const address = byAddress.get(d.to);
    const entry = d.contract === null ? batch.native : (batch.byContract.get(d.contract) ?? null);
    if (address === undefined || entry === null) continue;
    // Another currency sent to a customer's address is no deposit: the operator sees it as stray (issue 50).
    if (symbolOf(entry) !== address.currency) {
      await recordStray(tx, network.name, { depositAddressId: address.id }, entry.ticker, d, now);
      continue;
    }
    const transfer = {
      address,
      entry,
      place: {
        network: network.name,
        txHash: d.txHash,
        logIndex: d.logIndex,
        blockNumber: d.block.number,
        blockHash: d.block.hash,
      },
      amountMinor: d.amountMinor,
      fromAddress: d.from,
      confirmed: head - d.block.number + 1n >= countingDepth(network),
      screening: batch.screening.get(d.from) ?? "pending",
    };
    if (await deposits.record(tx, transfer, now)) recorded++;
  }
  return recorded;
}

/**
 * A confirmed payment's way to the hot wallet: a forwarder deposit address waits for a flush (product
 * §24: no gas is ever sent to it), a derived one is swept.
 */
async function moveToHotWallet(tx: Tx, event: ChainPaymentEvent, target: DepositInvoice, entry: Currency, now: string) {
  if (target.depositFactory !== null && target.depositFactory !== undefined) {
    const token = entry.contractAddress === null ? null : (entry.contractAddress as string);
    await queueFlushDeposit(
      tx,
      event,
      { ...target, factory: target.depositFactory, currency: entry.ticker, token },
      now,
    );
    return;
  }
  const { depositIndex } = target;
  assert(depositIndex !== null, `the derived deposit address of invoice ${target.invoiceId} has its index`);
  await createSweepFor(tx, event, { ...target, depositIndex, currency: entry.ticker }, now);
}

/** Keeps a transfer the invoice or customer address does not take for the operator (GET /admin/v1/stray-payments). */
async function recordStray(
  tx: Tx,
  network: string,
  at: { invoiceId: string } | { depositAddressId: string },
  entry: string,
  d: Deposit,
  now: string,
) {
  await recordStrayPayment(tx, {
    network,
    txId: chainTxId({ txHash: d.txHash, logIndex: d.logIndex }),
    invoiceId: "invoiceId" in at ? at.invoiceId : null,
    depositAddressId: "depositAddressId" in at ? at.depositAddressId : null,
    currency: entry,
    amountMinor: d.amountMinor,
    fromAddress: d.from,
    blockNumber: d.block.number,
    blockHash: d.block.hash,
    createdAt: now,
  });
}

/** Payments now deep enough: confirmed (they may complete their invoice), then swept. */
async function confirmDeep(
  network: Network,
  head: bigint,
  {
    settle,
    deposits,
    catalog,
  }: { settle: SettleChainPayment; deposits: CustomerDeposits; catalog: readonly Currency[] },
  fenced: Fenced,
): Promise<number> {
  const depthReached = head - countingDepth(network) + 1n;
  return fenced(async (tx, now) => {
    const checkpoint = await tx.db
      .selectFrom("networks")
      .select("scanned_block")
      .where("name", "=", network.name)
      .executeTakeFirst();
    const scanned =
      checkpoint?.scanned_block === null || checkpoint === undefined ? -1n : BigInt(checkpoint.scanned_block);
    const limit = depthReached < scanned ? depthReached : scanned;
    let confirmed = 0;
    const due = await unconfirmedUpTo(tx, network.name, limit, CONFIRM_BATCH);
    for (const p of due) {
      if (await confirmPayment(tx, network, catalog, p, now, settle)) confirmed++;
    }
    // Customers' deposits deep enough (product §30): settled once each.
    for (const row of await unconfirmedDepositsUpTo(tx, network.name, limit, CONFIRM_BATCH)) {
      if (await deposits.confirm(tx, row, now)) confirmed++;
    }
    await recordNodeState(tx, network.name, { headBlock: head, nodeError: null }, now);
    return confirmed;
  });
}

async function confirmPayment(
  tx: Tx,
  network: Network,
  catalog: readonly Currency[],
  p: UnconfirmedChainPayment,
  now: string,
  settle: SettleChainPayment,
): Promise<boolean> {
  const invoice = await lockInvoice(tx, p.invoiceId);
  if (!invoice) return false;
  const row = await tx.db.selectFrom("invoice_payments").selectAll().where("id", "=", p.paymentId).executeTakeFirst();
  if (!row || row.confirmed === 1 || !row.tx_hash || !row.block_hash) return false;
  const event: ChainPaymentEvent = {
    place: {
      network: network.name,
      txHash: row.tx_hash,
      logIndex: row.log_index ?? null,
      blockNumber: p.blockNumber,
      blockHash: row.block_hash,
    },
    amountMinor: BigInt(row.amount),
    fromAddress: row.from_address ?? "",
    confirmed: true,
    arrivedAt: row.created_at,
    // Known already: its screening was decided when it was recorded.
    screening: "pending",
  };
  const outcome = await settle(tx, invoice, event, now);
  if (invoice.depositAddress !== null) {
    const target: DepositInvoice = {
      invoiceId: invoice.id,
      depositAddress: invoice.depositAddress,
      depositIndex: invoice.depositIndex ?? null,
      depositFactory: invoice.depositFactory ?? null,
      currency: invoice.currency,
      currencyEntry: invoice.currencyEntry ?? null,
    };
    // The entry the payment came in on (this network's), moved in its own units.
    const entry = catalog.find((c) => c.network === network.name && payableOn(target, c));
    const first = catalog.find((c) => c.ticker === invoice.currency);
    // The counted amount is in the invoice's units: moved in the entry's, with its dust.
    const counted = entry && first ? inUnitsOf(event.amountMinor, first.decimals, entry.decimals) : event.amountMinor;
    const dust = BigInt(row.dust ?? "0");
    if (dust > 0n && entry) await postDust(tx, invoice.id, chainTxId(event.place), entry.ticker, dust, now);
    const moved = { ...event, amountMinor: counted + dust };
    // A forwarder's deposit waits for a flush, a derived one is swept (moveToHotWallet).
    const movedIn = entry ?? first;
    assert(movedIn !== undefined, `the currency of invoice ${invoice.id} is in the catalog`);
    await moveToHotWallet(tx, moved, target, movedIn, now);
  }
  return outcome !== "unchanged";
}

/**
 * Where the chain the node follows now leaves the blocks scanned: the highest stored block whose
 * hash the node still has. Bounded by the hashes kept; beyond them, scanning restarts just before
 * the oldest unconfirmed payment could be (confirmed payments are final).
 */
async function findFork(
  store: Store,
  network: Network,
  client: ChainClient,
): Promise<{ number: bigint; hash: string | null }> {
  const top = network.scannedBlock ?? -1n;
  const window = BigInt(network.confirmations) + EXTRA_HASHES_KEPT;
  const bottom = top - window < 0n ? 0n : top - window;
  const stored = await scannedHashes(store, network.name, bottom, top);
  for (let n = top; n >= bottom; n--) {
    const hash = stored.get(n);
    if (hash === undefined) continue;
    const block = must(await client.block(n, { withTransactions: false }), "eth_getBlockByNumber");
    if (block !== null && block.hash === hash) return { number: n, hash };
  }
  return { number: bottom - 1n, hash: null };
}

/** Whether a payment in `entry` counts for the invoice (product §23): its currency, and its entry when the invoice names one. */
function payableOn(target: DepositInvoice, entry: Currency): boolean {
  if (symbolOf(entry) !== target.currency && entry.ticker !== target.currency) return false;
  return target.currencyEntry === null || target.currencyEntry === undefined || target.currencyEntry === entry.ticker;
}

/**
 * A payment's amount counted to the ticker's precision (the smallest decimals of its entries), in
 * the invoice's units (its first entry's); the rest is dust, in the entry's units.
 */
function countedAt(catalog: readonly Currency[], invoiceCurrency: string, entry: Currency, minor: bigint) {
  const first = catalog.find((c) => c.ticker === invoiceCurrency);
  if (first === undefined) return { counted: minor, dust: 0n };
  const precision = precisionOf(catalog.filter((c) => symbolOf(c) === symbolOf(first)));
  return countedForInvoice(minor, entry.decimals, precision, first.decimals);
}

/**
 * Keeps a payment's dust on its row and, once the payment is confirmed (final), credits it to the
 * operator's dust account in the entry it came in, once per payment (product §23).
 */
async function keepDust(
  tx: Tx,
  invoiceId: string,
  network: string,
  place: ChainPaymentEvent["place"],
  entryKey: string,
  dust: bigint,
  confirmed: boolean,
  now: string,
): Promise<void> {
  const txId = chainTxId(place);
  await tx.db
    .updateTable("invoice_payments")
    .set({ dust: dust.toString() })
    .where("invoice_id", "=", invoiceId)
    .where("network", "=", network)
    .where("tx_id", "=", txId)
    .execute();
  if (confirmed) await postDust(tx, invoiceId, txId, entryKey, dust, now);
}

async function postDust(tx: Tx, invoiceId: string, txId: string, entryKey: string, dust: bigint, now: string) {
  const posted = await postMovement(
    tx,
    movement({
      cause: "invoice",
      causeId: invoiceId,
      kind: `dust:${txId}`,
      memo: `dust of payment ${txId}`,
      postings: [
        { account: SYSTEM_ACCOUNTS.incomingPayments, currency: entryKey, amount: -dust },
        { account: SYSTEM_ACCOUNTS.dust, currency: entryKey, amount: dust },
      ],
    }),
    now,
  );
  assert(posted.ok || posted.error === "already_posted", `dust refused (${posted.ok ? "" : posted.error})`);
}
