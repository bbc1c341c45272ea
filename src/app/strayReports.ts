// The operator's report of a stray the scanner cannot see (issue 50): a token the catalog lacks, or the native coin sent to a token's address, sent to a forwarder deposit address, found in the transaction the operator names, listed as a stray so that it can be recovered.
import type { ChainLog, ChainReceipt, Hex } from "../domain/chain.ts";
import { symbolOf } from "../domain/currencies.ts";
import { eip55 } from "../domain/evmAddress.ts";
import { listCurrencies } from "../store/currencies.ts";
import { findNetwork, type Network } from "../store/networks.ts";
import { nowIso, type Tx } from "../store/store.ts";
import { findStrayPayment, recordStrayPayment, type StrayPayment } from "../store/strayPayments.ts";
import type { ServiceContext } from "./context.ts";
import { type Outcome, refuse, withRefusals } from "./refusal.ts";

/** keccak-256 of `Transfer(address,address,uint256)`: ERC-20's transfer event. */
const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";

export type StrayReportRefusal =
  | "network_not_found"
  | "node_unavailable"
  | "stray_transaction_not_found"
  | "stray_transaction_not_final"
  | "stray_transfer_not_found";

interface Transfer {
  /** Null: the native coin, the transaction's own value. */
  contract: string | null;
  from: string;
  to: `0x${string}`;
  value: bigint;
  /** Null: the native coin (its tx id is the hash alone, as the scanner's). */
  logIndex: number | null;
}

function addressOfTopic(topic: Hex): `0x${string}` {
  return eip55(topic.slice(-40).toLowerCase());
}

/** The receipt's ERC-20 Transfer logs (three topics; an ERC-721's has four) of a positive value. */
function transfersOf(logs: readonly ChainLog[]): Transfer[] {
  const found: Transfer[] = [];
  for (const [i, log] of logs.entries()) {
    if (log.topics.length !== 3 || log.topics[0]?.toLowerCase() !== TRANSFER_TOPIC) continue;
    const value = log.data === "0x" ? 0n : BigInt(log.data);
    if (value <= 0n) continue;
    found.push({
      contract: log.address.toLowerCase(),
      from: addressOfTopic(log.topics[1] as Hex),
      to: addressOfTopic(log.topics[2] as Hex),
      value,
      logIndex: log.logIndex ?? i,
    });
  }
  return found;
}

/**
 * The invoice forwarder or customer's address at `to`, if it is one, with the symbol of what it
 * takes (`USDT`, `ETH`).
 */
async function depositAddressAt(tx: Tx, to: string) {
  const invoice = await tx.db
    .selectFrom("invoices")
    .leftJoin("currencies", "currencies.ticker", "invoices.currency")
    .select(["invoices.id", "invoices.currency", "currencies.symbol"])
    .where("invoices.deposit_address", "=", to)
    .where("invoices.deposit_factory", "is not", null)
    .executeTakeFirst();
  if (invoice !== undefined) {
    const takes = invoice.symbol ?? invoice.currency;
    return { place: { invoiceId: invoice.id, depositAddressId: null }, takes };
  }
  const customer = await tx.db
    .selectFrom("deposit_addresses")
    .select(["id", "currency"])
    .where("address", "=", to)
    .executeTakeFirst();
  return customer === undefined
    ? null
    : { place: { invoiceId: null, depositAddressId: customer.id }, takes: customer.currency };
}

async function finalReceipt(ctx: ServiceContext, network: Network, hash: Hex) {
  const client = ctx.chains.for(network.name, network.rpcUrl);
  const [receipt, head] = await Promise.all([client.receipt(hash), client.headBlockNumber()]);
  if (!receipt.ok || !head.ok) {
    return refuse("node_unavailable", "The node did not answer; nothing was recorded. Try again.", "/", null);
  }
  if (receipt.value === null) {
    return refuse("stray_transaction_not_found", `No transaction ${hash} is mined on ${network.name}.`, "/txHash");
  }
  if (head.value - receipt.value.blockNumber + 1n < BigInt(network.confirmations)) {
    const detail = `The transaction is not yet ${network.confirmations} blocks deep on ${network.name}: report it once it is.`;
    return refuse("stray_transaction_not_final", detail, "/txHash");
  }
  return receipt.value;
}

/**
 * The native coin the transaction itself sent (its value), when it succeeded: read from its block,
 * which the receipt names. The scanner reads block bodies only while a native-coin payment is
 * awaited on the network, so ETH sent to a token's deposit address is seen only here. A value a
 * contract passed on inside the transaction is not.
 */
async function nativeTransferOf(
  ctx: ServiceContext,
  network: Network,
  receipt: ChainReceipt,
  hash: Hex,
): Promise<Transfer | null> {
  if (receipt.status !== "success") return null;
  const client = ctx.chains.for(network.name, network.rpcUrl);
  const block = await client.block(receipt.blockNumber, { withTransactions: true });
  if (!block.ok || block.value === null || block.value.hash.toLowerCase() !== receipt.blockHash.toLowerCase()) {
    return refuse(
      "node_unavailable",
      "The node did not answer the transaction's block; nothing was recorded. Try again.",
      "/",
      null,
    );
  }
  const sent = block.value.transactions.find((t) => t.hash.toLowerCase() === hash.toLowerCase());
  if (sent === undefined || sent.to === null || sent.value <= 0n) return null;
  return {
    contract: null,
    from: eip55(sent.from.slice(2).toLowerCase()),
    to: eip55(sent.to.slice(2).toLowerCase()),
    value: sent.value,
    logIndex: null,
  };
}

/** The transaction's transfers that may be strays: tokens the catalog lacks, and its native value when the catalog has the coin. */
async function candidateTransfers(ctx: ServiceContext, network: Network, receipt: ChainReceipt, hash: Hex) {
  const onNetwork = (await listCurrencies(ctx.store)).filter((c) => c.network === network.name);
  const catalog = new Set(
    onNetwork.flatMap((c) => (c.contractAddress === null ? [] : [c.contractAddress.toLowerCase()])),
  );
  const tokens = transfersOf(receipt.logs ?? []).filter((t) => !catalog.has(t.contract as string));
  const native = onNetwork.find((c) => c.contractAddress === null) ?? null;
  const coin = native === null ? null : await nativeTransferOf(ctx, network, receipt, hash);
  const nativeEntry = native === null ? null : { ticker: native.ticker, symbol: symbolOf(native) };
  return { transfers: coin === null ? tokens : [coin, ...tokens], native: nativeEntry };
}

/**
 * Records as strays what transaction `txHash` sent to forwarder deposit addresses (an invoice's or
 * a customer's) on `network` and nothing counts: transfers of tokens the catalog lacks, and its
 * native value to an address that takes a token; once it is the network's confirmations deep.
 * Idempotent (a stray is its network and tx id). Answers them.
 */
export function reportStrays(
  ctx: ServiceContext,
  report: { network: string; txHash: Hex },
): Promise<Outcome<StrayPayment[], StrayReportRefusal>> {
  return withRefusals(async () => {
    const network = await findNetwork(ctx.store, ctx.box, report.network);
    if (!network) return refuse("network_not_found", `No network ${report.network} is configured.`, "/network");
    const receipt = await finalReceipt(ctx, network, report.txHash);
    const { transfers, native } = await candidateTransfers(ctx, network, receipt, report.txHash);
    const hash = report.txHash.toLowerCase();
    return ctx.store.transaction(async (tx) => {
      const recorded: StrayPayment[] = [];
      for (const t of transfers) {
        const at = await depositAddressAt(tx, t.to);
        if (at === null) continue;
        // The native coin at an address that takes it (an ETH invoice's or customer's) is a payment
        // or nothing: a recovery there could move a payment's coin not yet flushed. Elsewhere
        // nothing counts it (the scanner, reading bodies, records it as this same stray).
        if (t.contract === null && at.takes === native?.symbol) continue;
        const txId = t.logIndex === null ? hash : `${hash}:${t.logIndex}`;
        const stray: StrayPayment = {
          network: network.name,
          txId,
          ...at.place,
          currency: t.contract === null ? (native?.ticker ?? null) : null,
          token: t.contract,
          amountMinor: t.value,
          fromAddress: t.from,
          blockNumber: receipt.blockNumber,
          blockHash: receipt.blockHash,
          createdAt: nowIso(),
        };
        await recordStrayPayment(tx, stray);
        recorded.push((await findStrayPayment(tx, network.name, txId)) ?? stray);
      }
      if (recorded.length === 0) {
        const detail = `Transaction ${report.txHash} sent to no forwarder deposit address on ${network.name} a token the catalog lacks, or the native coin to an address that takes a token.`;
        return refuse("stray_transfer_not_found", detail, "/txHash");
      }
      return recorded;
    });
  });
}
