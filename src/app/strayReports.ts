// The operator's report of a stray token the scanner cannot see (issue 50): a token the catalog lacks sent to a deposit address, found in the transaction the operator names (its receipt's Transfer logs), listed as a stray so that it can be recovered.
import type { ChainLog, Hex } from "../domain/chain.ts";
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
  contract: string;
  from: string;
  to: `0x${string}`;
  value: bigint;
  logIndex: number;
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

/** The invoice forwarder or customer's address at `to`, if it is one. */
async function depositAddressAt(tx: Tx, to: string) {
  const invoice = await tx.db
    .selectFrom("invoices")
    .select("id")
    .where("deposit_address", "=", to)
    .where("deposit_factory", "is not", null)
    .executeTakeFirst();
  if (invoice !== undefined) return { invoiceId: invoice.id, depositAddressId: null };
  const customer = await tx.db
    .selectFrom("deposit_addresses")
    .select("id")
    .where("address", "=", to)
    .executeTakeFirst();
  return customer === undefined ? null : { invoiceId: null, depositAddressId: customer.id };
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
 * Records as strays the transfers, in tokens the catalog lacks on `network`, that transaction
 * `txHash` made to forwarder deposit addresses (an invoice's or a customer's), once it is the
 * network's confirmations deep. Idempotent (a stray is its network and tx id). Answers them.
 */
export function reportStrays(
  ctx: ServiceContext,
  report: { network: string; txHash: Hex },
): Promise<Outcome<StrayPayment[], StrayReportRefusal>> {
  return withRefusals(async () => {
    const network = await findNetwork(ctx.store, ctx.box, report.network);
    if (!network) return refuse("network_not_found", `No network ${report.network} is configured.`, "/network");
    const receipt = await finalReceipt(ctx, network, report.txHash);
    const catalog = new Set(
      (await listCurrencies(ctx.store))
        .filter((c) => c.network === network.name && c.contractAddress !== null)
        .map((c) => (c.contractAddress as string).toLowerCase()),
    );
    const transfers = transfersOf(receipt.logs ?? []).filter((t) => !catalog.has(t.contract));
    return ctx.store.transaction(async (tx) => {
      const recorded: StrayPayment[] = [];
      for (const t of transfers) {
        const at = await depositAddressAt(tx, t.to);
        if (at === null) continue;
        const txId = `${report.txHash.toLowerCase()}:${t.logIndex}`;
        const stray: StrayPayment = {
          network: network.name,
          txId,
          ...at,
          currency: null,
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
        const detail = `Transaction ${report.txHash} sent no token the catalog lacks to a forwarder deposit address on ${network.name}.`;
        return refuse("stray_transfer_not_found", detail, "/txHash");
      }
      return recorded;
    });
  });
}
