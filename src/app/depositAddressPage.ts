// A customer's deposit address as its payer sees it on /d/{id} (product §30): the currency, the address and a payment URI per live network, whether it is active, and the latest deposits; never the merchant's reference, callback or another customer's data.
import { symbolOf } from "../domain/currencies.ts";
import type { DepositStatus } from "../domain/depositAddresses.ts";
import { formatAmount } from "../domain/money.ts";
import { depositUri } from "../domain/paymentUri.ts";
import { listCurrencies } from "../store/currencies.ts";
import { findDepositAddressById, recentDepositsTo } from "../store/depositAddresses.ts";
import { findMerchant } from "../store/merchants.ts";
import type { ServiceContext } from "./context.ts";
import { liveEntries } from "./depositAddresses.ts";

/** The page shows this many deposits, newest first: a payer checks the latest, the merchant keeps the history. */
export const PAGE_DEPOSITS = 20;

export interface DepositPageNetwork {
  network: string;
  /** null: the network has no chain id configured, so no URI (a wallet would guess the chain). */
  chainId: number | null;
  internalTicker: string;
  /** EIP-681 without an amount: the payer chooses what to send. */
  uri: string | null;
}

export interface DepositPageDeposit {
  amount: string;
  entry: string;
  network: string;
  status: DepositStatus;
  txHash: string;
  createdAt: string;
}

export interface DepositAddressPageView {
  id: string;
  currency: string;
  address: string;
  active: boolean;
  networks: DepositPageNetwork[];
  deposits: DepositPageDeposit[];
  merchant: { name: string | null; logo: string | null; whitelabeling: boolean };
}

async function chainIds(ctx: ServiceContext): Promise<Map<string, number>> {
  const rows = await ctx.store.db.selectFrom("networks").select(["name", "chain_id"]).execute();
  return new Map(rows.map((n) => [n.name, Number(n.chain_id)]));
}

/** The page's view of an address by id alone (the id is the capability, as an invoice's), or null. */
export async function depositAddressPageView(ctx: ServiceContext, id: string): Promise<DepositAddressPageView | null> {
  const row = await findDepositAddressById(ctx.store, id);
  if (row === null) return null;
  const catalog = await listCurrencies(ctx.store);
  const [live, chains, merchant, rows] = await Promise.all([
    liveEntries(
      ctx,
      catalog.filter((c) => symbolOf(c) === row.currency),
    ),
    chainIds(ctx),
    findMerchant(ctx.store, row.merchant_id),
    recentDepositsTo(ctx.store, row, PAGE_DEPOSITS),
  ]);
  const decimals = new Map(catalog.map((c) => [c.ticker, c.decimals]));
  const networks = live.map((e) => {
    const chainId = chains.get(e.network) ?? null;
    const uri =
      chainId === null ? null : depositUri({ address: row.address, chainId, contractAddress: e.contractAddress });
    return { network: e.network, chainId, internalTicker: e.internalTicker, uri };
  });
  return {
    id: row.id,
    currency: row.currency,
    address: row.address,
    active: row.active === 1,
    networks,
    deposits: rows.map((d) => ({
      amount: formatAmount(BigInt(d.amount), decimals.get(d.currency) ?? 0),
      entry: d.currency,
      network: d.network,
      status: d.status as DepositStatus,
      txHash: d.tx_hash,
      createdAt: d.created_at,
    })),
    merchant: {
      name: merchant?.merchantName ?? null,
      logo: merchant?.logo ?? null,
      whitelabeling: merchant?.whitelabeling ?? false,
    },
  };
}
