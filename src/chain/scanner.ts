// The deposit scanner of one network (product §12): follows the chain block by block, records transfers to deposit addresses, confirms them at depth, and undoes reorganisations.
import type { ChainBlock, ChainClient, Hex, TransferLog } from "../domain/chain.ts";
import type { Currency } from "../domain/currencies.ts";
import { isFiat } from "../domain/currencies.ts";
import { dropPaymentsAfter, invoicesByDepositAddress, unconfirmedUpTo } from "../store/chainPayments.ts";
import { listCurrencies } from "../store/currencies.ts";
import { lockInvoice } from "../store/invoices.ts";
import {
  advanceCheckpoint,
  fenceScanLease,
  type Network,
  recordNodeState,
  rewindCheckpoint,
  type ScanLease,
  scannedHashes,
} from "../store/networks.ts";
import { type ChainPaymentEvent, recordChainPayment, type SenderScreening } from "../store/settlement.ts";
import type { Store, Tx } from "../store/store.ts";
import { nowIso } from "../store/store.ts";
import { createSweepFor } from "../store/sweeps.ts";

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
}

class NodeFailure extends Error {}

function must<T>(answer: { ok: true; value: T } | { ok: false; error: string; detail?: string }, what: string): T {
  if (!answer.ok) throw new NodeFailure(`${answer.error}: ${what}${answer.detail ? ` (${answer.detail})` : ""}`);
  return answer.value;
}

/** The catalog currencies of a network: its native coin (no contract) and its tokens by contract. */
function currenciesOf(network: string, catalog: readonly Currency[]) {
  const onNetwork = catalog.filter((c) => c.network === network && !isFiat(c));
  return {
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
  publicBaseUrl: string,
  lease: ScanLease | null = null,
  hooks: ScanHooks = {},
  screen: ScreenSender = unscreened,
): Promise<ScanOutcome> {
  // Every write of the batch first checks the lease in its own transaction (product §19): a batch
  // that outlived its lease (a paused process, a slow node) writes nothing (ScanLeaseLost).
  const fenced = <T>(work: (tx: Tx) => Promise<T>) =>
    store.transaction(async (tx) => {
      if (lease !== null) await fenceScanLease(tx, network.name, lease, nowIso());
      return work(tx);
    });
  try {
    return await scan(store, network, client, publicBaseUrl, fenced, hooks, screen);
  } catch (error) {
    if (!(error instanceof NodeFailure)) throw error;
    await fenced((tx) => recordNodeState(tx, network.name, { nodeError: error.message }, nowIso()));
    return { blocks: 0, payments: 0, nodeError: error.message, head: null };
  }
}

type Fenced = <T>(work: (tx: Tx) => Promise<T>) => Promise<T>;

/** A test's hook into a scan batch (the worker sets it from SCANNER_TEST_PAUSE_AT; never in production). */
export interface ScanHooks {
  /** Called when the batch has read blocks with transfers and is about to record them. */
  beforeRecord?: () => void;
}

/** How the scanner learns a sender's screening without waiting on a provider (app/screening.ts screenSenderNow). */
export type ScreenSender = (address: string) => Promise<SenderScreening>;

/** Without a screening function every new payment waits for the screening worker: never settled unscreened. */
const unscreened: ScreenSender = async () => "pending";

/** Each distinct sender once. */
async function screenSenders(senders: readonly string[], screen: ScreenSender): Promise<Map<string, SenderScreening>> {
  const verdicts = new Map<string, SenderScreening>();
  for (const from of senders) if (!verdicts.has(from)) verdicts.set(from, await screen(from));
  return verdicts;
}

async function scan(
  store: Store,
  network: Network,
  client: ChainClient,
  publicBaseUrl: string,
  fenced: Fenced,
  hooks: ScanHooks,
  screen: ScreenSender,
): Promise<ScanOutcome> {
  const chainId = must(await client.chainId(), "eth_chainId");
  if (chainId !== network.chainId) {
    throw new NodeFailure(`wrong_chain_id: the node is on chain ${chainId}, not ${network.chainId}`);
  }
  const head = must(await client.headBlockNumber(), "eth_blockNumber");
  let payments = 0;

  // A reorganisation: the block at the checkpoint is no longer the one scanned.
  let from = network.scannedBlock === null ? head - BigInt(network.confirmations) + 1n : network.scannedBlock + 1n;
  if (from < 0n) from = 0n;
  // The block the next one read must follow: the checkpoint, or after a rewind the fork block.
  let checkpoint = { number: network.scannedBlock, hash: network.scannedHash };
  if (network.scannedBlock !== null && network.scannedHash !== null) {
    const tip = must(await client.block(network.scannedBlock), "eth_getBlockByNumber");
    if (tip === null || tip.hash !== network.scannedHash) {
      const fork = await findFork(store, network, client);
      const dropped = await fenced(async (tx) => {
        const now = nowIso();
        const touched = await dropPaymentsAfter(tx, network.name, fork.number, now);
        await rewindCheckpoint(tx, network.name, fork.number < 0n ? null : fork.number, fork.hash);
        return touched.length;
      });
      payments += dropped;
      from = fork.number + 1n;
      checkpoint = { number: fork.number < 0n ? null : fork.number, hash: fork.hash };
    }
  }

  let blocks = 0;
  if (from <= head) {
    const to = from + BigInt(SCAN_BATCH_BLOCKS) - 1n < head ? from + BigInt(SCAN_BATCH_BLOCKS) - 1n : head;
    const catalog = await listCurrencies(store);
    const { native, byContract } = currenciesOf(network.name, catalog);
    const read: ChainBlock[] = [];
    for (let n = from; n <= to; n++) {
      const block = must(await client.block(n), "eth_getBlockByNumber");
      if (block === null) break; // the node's head moved back meanwhile: scan the rest next time
      const previous = read[read.length - 1];
      if (previous && block.parentHash !== previous.hash) {
        throw new NodeFailure("node_error: blocks changed while being read (a reorganisation in progress)");
      }
      read.push(block);
    }
    if (read.length > 0) {
      const first = read[0] as ChainBlock;
      const last = read[read.length - 1] as ChainBlock;
      if (checkpoint.number !== null && checkpoint.hash !== null && first.number === checkpoint.number + 1n) {
        // After a rewind too: a chain that moved again between finding the fork and reading on is not taken.
        if (first.parentHash !== checkpoint.hash) {
          throw new NodeFailure(
            "node_error: the next block does not follow the checkpoint (a reorganisation in progress)",
          );
        }
      }
      const logs: TransferLog[] =
        byContract.size === 0
          ? []
          : must(
              await client.transferLogs(
                [...byContract.values()].map((c) => c.contractAddress as Hex),
                first.number,
                last.number,
              ),
              "eth_getLogs",
            );
      const byNumber = new Map(read.map((b) => [b.number, b]));
      const deposits: Deposit[] = [];
      for (const block of read) {
        for (const t of block.transactions) {
          if (t.to !== null && t.value > 0n) {
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
      }
      for (const log of logs) {
        const block = byNumber.get(log.blockNumber);
        // A log from a block other than the one read: the node changed its mind mid-batch.
        if (!block || block.hash !== log.blockHash) {
          throw new NodeFailure("node_error: logs and blocks disagree (a reorganisation in progress)");
        }
        if (log.value > 0n) {
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
      }
      // Each sender is screened before its payment is recorded, outside the transaction (product §21).
      const screening = await screenSenders(
        deposits.map((d) => d.from),
        screen,
      );
      if (deposits.length > 0) hooks.beforeRecord?.();
      payments += await fenced(async (tx) => {
        const now = nowIso();
        let recorded = 0;
        const invoices = await invoicesByDepositAddress(
          tx,
          deposits.map((d) => d.to),
        );
        const invoiceOf = new Map(invoices.map((i) => [i.depositAddress, i]));
        for (const d of deposits) {
          const target = invoiceOf.get(d.to);
          if (!target) continue;
          const currency = d.contract === null ? native : (byContract.get(d.contract) ?? null);
          // Another currency sent to the address is not this invoice's payment (see docs/evm.md, limits).
          if (currency === null || currency.ticker !== target.currency) continue;
          const invoice = await lockInvoice(tx, target.invoiceId);
          if (!invoice) continue;
          const depth = head - d.block.number + 1n;
          const event: ChainPaymentEvent = {
            place: {
              network: network.name,
              txHash: d.txHash,
              logIndex: d.logIndex,
              blockNumber: d.block.number,
              blockHash: d.block.hash,
            },
            amountMinor: d.amountMinor,
            fromAddress: d.from,
            confirmed: depth >= BigInt(network.confirmations),
            arrivedAt: new Date(Number(d.block.timestamp) * 1000).toISOString(),
            screening: screening.get(d.from) ?? "pending",
          };
          const outcome = await recordChainPayment(tx, invoice, event, now, publicBaseUrl);
          if (outcome !== "unchanged") recorded++;
          if (event.confirmed) await createSweepFor(tx, event, target, now);
        }
        const keepFrom = last.number - BigInt(network.confirmations) - EXTRA_HASHES_KEPT;
        await advanceCheckpoint(
          tx,
          network.name,
          read.map((b) => ({ number: b.number, hash: b.hash, timestamp: b.timestamp })),
          keepFrom,
        );
        return recorded;
      });
      blocks = read.length;
    }
  }

  // Payments now deep enough: confirmed (they may complete their invoice), then swept.
  const depthReached = head - BigInt(network.confirmations) + 1n;
  payments += await fenced(async (tx) => {
    const now = nowIso();
    const checkpoint = await tx.db
      .selectFrom("networks")
      .select("scanned_block")
      .where("name", "=", network.name)
      .executeTakeFirst();
    const scanned =
      checkpoint?.scanned_block === null || checkpoint === undefined ? -1n : BigInt(checkpoint.scanned_block);
    const limit = depthReached < scanned ? depthReached : scanned;
    let confirmed = 0;
    for (const p of await unconfirmedUpTo(tx, network.name, limit, CONFIRM_BATCH)) {
      const invoice = await lockInvoice(tx, p.invoiceId);
      if (!invoice) continue;
      const row = await tx.db
        .selectFrom("invoice_payments")
        .selectAll()
        .where("id", "=", p.paymentId)
        .executeTakeFirst();
      if (!row || row.confirmed === 1 || !row.tx_hash || !row.block_hash) continue;
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
      const outcome = await recordChainPayment(tx, invoice, event, now, publicBaseUrl);
      if (outcome !== "unchanged") confirmed++;
      if (invoice.depositAddress !== null && invoice.depositIndex !== null && invoice.depositIndex !== undefined) {
        await createSweepFor(
          tx,
          event,
          {
            invoiceId: invoice.id,
            depositAddress: invoice.depositAddress,
            depositIndex: invoice.depositIndex,
            currency: invoice.currency,
          },
          now,
        );
      }
    }
    await recordNodeState(tx, network.name, { headBlock: head, nodeError: null }, now);
    return confirmed;
  });
  return { blocks, payments, nodeError: null, head };
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
    const block = must(await client.block(n), "eth_getBlockByNumber");
    if (block !== null && block.hash === hash) return { number: n, hash };
  }
  return { number: bottom - 1n, hash: null };
}
