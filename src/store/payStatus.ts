// The payer's read model (product §13): one invoice as its payer may see it, and a cheap version to watch it by.
import { type Currency, inUnitsOf, isFiat } from "../domain/currencies.ts";
import type { InvoiceStatus } from "../domain/invoiceStatus.ts";
import { isLiveDeposit } from "../domain/invoices.ts";
import { formatAmount } from "../domain/money.ts";
import { type PaymentRails, paymentRail } from "../domain/paymentRails.ts";
import { chainIdOf, paymentUri } from "../domain/paymentUri.ts";
import { assert } from "../domain/result.ts";
import { amountDue, summarizePayments } from "../domain/settlement.ts";
import type { CatalogAuthorization } from "../domain/walletAuthorization.ts";
import { entriesOf, findCurrency } from "./currencies.ts";
import { findInvoiceById, type IncomingPayment, type Invoice } from "./invoices.ts";
import { findMerchant } from "./merchants.ts";
import type { Tx } from "./store.ts";

/** Confirmations a network needs before a payment counts; card payments are final once accepted. */
const REQUIRED_CONFIRMATIONS: Readonly<Record<string, number>> = { ethereum: 12, card: 1 };

export type PayPaymentState = "confirming" | "confirmed" | "under_review" | "blocked";

export interface PayPayment {
  txId: string;
  amount: string;
  confirmations: number;
  requiredConfirmations: number;
  state: PayPaymentState;
}

export interface PayStatus {
  id: string;
  status: InvoiceStatus;
  currency: string;
  /** The network offered first (the payer may choose another of `networks`); `card` for fiat; null: no network takes the payment now. */
  network: string | null;
  /** Decimals of the currency, so that the page formats amounts exactly. */
  decimals: number;
  chainId: number | null;
  address: string | null;
  paymentUri: string | null;
  amountDue: string;
  finalAmount: string;
  paidAmount: string;
  expiresAt: string | null;
  payments: PayPayment[];
  merchant: { name: string | null; logo: string | null; whitelabeling: boolean };
  redirectUrl: string | null;
  orderNo: string | null;
  description: string | null;
  /** Every network the invoice is payable on (product §23), each with its own payment URI; one for a single-network currency. */
  networks: PayNetwork[];
}

export interface PayNetwork {
  name: string;
  chainId: number | null;
  internalTicker: string;
  contractAddress: string | null;
  paymentUri: string | null;
  /** How the payer may pay by signature here (product §28): a live token entry's, while the invoice takes payments; else null. */
  authorization: CatalogAuthorization | null;
  /** The amount due in this entry's own units (what a signature authorizes). */
  amountDueMinor: bigint;
}

/** Settled for the payer: nothing more will happen on this page. */
export const FINAL_PAY_STATUSES: ReadonlySet<InvoiceStatus> = new Set<InvoiceStatus>([
  "completed",
  "refund_processing",
  "refunded",
  "failed",
  "expired",
  "aml_block",
]);

/** The merchant link for the current status: success after payment, fail after failure, otherwise return. */
export function redirectFor(invoice: Pick<Invoice, "status" | "successUrl" | "failUrl" | "returnUrl">): string | null {
  switch (invoice.status) {
    case "completed":
    case "refund_processing":
    case "refunded":
      return invoice.successUrl ?? invoice.returnUrl;
    case "failed":
    case "expired":
    case "aml_block":
      return invoice.failUrl ?? invoice.returnUrl;
    default:
      return invoice.returnUrl;
  }
}

/**
 * Confirmations come from the payment rows. Today's rows (sandbox payments) only say confirmed or not,
 * so a confirmed payment shows the required count and an unconfirmed one zero; live deposits with a
 * counted depth replace `seen` here.
 */
function payPayment(p: IncomingPayment, required: number, head: bigint | null): PayPayment {
  // A live chain payment counts its real depth from the head the scanner last saw.
  let seen = p.confirmed ? required : 0;
  if (p.chain && head !== null && !p.confirmed) {
    const depth = head - p.chain.blockNumber + 1n;
    seen = depth < 0n ? 0 : Number(depth < BigInt(required) ? depth : BigInt(required - 1 > 0 ? required - 1 : 0));
  }
  let state: PayPaymentState = p.confirmed ? "confirmed" : "confirming";
  // Confirmed but its sender not screened yet: it counts for nothing until it is (product §21).
  if (p.amlStatus === "unscreened") state = "confirming";
  if (p.amlStatus === "flagged") state = "under_review";
  if (p.amlStatus === "blocked") state = "blocked";
  // A chain payment shows its transaction hash (the log index of a token transfer is not the payer's concern).
  return { txId: p.chain?.txHash ?? p.txId, amount: "", confirmations: seen, requiredConfirmations: required, state };
}

/** A configured network as the payer's page reads it: its chain id, depth and the head its scanner last saw. */
interface NetworkRow {
  chainId: number;
  confirmations: number;
  head: bigint | null;
}

/** The configured networks (a few rows): read once per status. */
async function networkRows(tx: Tx): Promise<Map<string, NetworkRow>> {
  const rows = await tx.db.selectFrom("networks").select(["name", "chain_id", "confirmations", "head_block"]).execute();
  return new Map(
    rows.map((n) => [
      n.name,
      {
        chainId: Number(n.chain_id),
        confirmations: n.confirmations,
        head: n.head_block === null ? null : BigInt(n.head_block),
      },
    ]),
  );
}

/**
 * The depth a payment needs and the head it is counted from: its own network's for a live chain
 * payment, else the default network's (a sandbox or card payment counts no blocks).
 */
function depthOf(
  p: IncomingPayment,
  defaultNetwork: string,
  chains: ReadonlyMap<string, NetworkRow>,
): { required: number; head: bigint | null } {
  const row = chains.get(p.chain?.network ?? defaultNetwork);
  if (row !== undefined) return { required: row.confirmations, head: row.head };
  return { required: REQUIRED_CONFIRMATIONS[defaultNetwork] ?? 1, head: null };
}

/**
 * The invoice as its payer sees it, or null when no invoice has this id. Reveals nothing beyond it.
 * The network, address, payment URI (and so the QR code) it defaults to are those of the first of
 * its payable networks (those passing `rails`' gate), never of a catalog entry that takes nothing;
 * with none, it offers no network and no address.
 */
export async function payStatus(tx: Tx, invoiceId: string, rails: PaymentRails): Promise<PayStatus | null> {
  const loaded = await findInvoiceById(tx, invoiceId);
  if (!loaded) return null;
  const { invoice: i, decimals, payments } = loaded;
  const [currency, merchant] = await Promise.all([findCurrency(tx, i.currency), findMerchant(tx, i.merchantId)]);
  assert(currency, `invoice ${i.id} has a catalog currency`);
  const due = amountDue(i.finalAmountMinor, payments);
  const fiat = isFiat(currency);
  // Only while the invoice takes payments: a settled invoice offers nothing to scan.
  const open = (i.status === "pending" || i.status === "processing") && due > 0n;
  // A live deposit (product §12) counts on its configured networks' chain ids and depths.
  const chains = !fiat && isLiveDeposit(i) ? await networkRows(tx) : new Map<string, NetworkRow>();
  const offer = { rails, chains, address: open ? i.depositAddress : null, due, decimals };
  const networks = fiat ? [] : await payNetworks(tx, i, offer);
  const first = networks[0];
  const network = fiat ? currency.network : (first?.name ?? null);
  return {
    networks,
    id: i.id,
    status: i.status,
    currency: i.currency,
    network,
    decimals,
    chainId: first?.chainId ?? null,
    address: first === undefined ? null : i.depositAddress,
    paymentUri: first?.paymentUri ?? null,
    amountDue: formatAmount(due, decimals),
    finalAmount: formatAmount(i.finalAmountMinor, decimals),
    paidAmount: formatAmount(summarizePayments(payments).paidMinor, decimals),
    expiresAt: i.expiresAt,
    payments: payments.map((p) => {
      const { required, head } = depthOf(p, network ?? currency.network, chains);
      return { ...payPayment(p, required, head), amount: formatAmount(p.amountMinor, decimals) };
    }),
    merchant: {
      name: merchant?.merchantName ?? null,
      logo: merchant?.logo ?? null,
      whitelabeling: merchant?.whitelabeling ?? false,
    },
    redirectUrl: redirectFor(i),
    orderNo: i.orderNo,
    description: i.description,
  };
}

/** What changes whenever anything the payer sees changes (payments touch the invoice): one indexed read. */
export async function payVersion(tx: Tx, invoiceId: string): Promise<string | null> {
  const row = await tx.db
    .selectFrom("invoices")
    .select(["status", "updated_at", "deposit_index", "deposit_factory", "currency"])
    .where("id", "=", invoiceId)
    .executeTakeFirst();
  if (!row) return null;
  if (!isLiveDeposit({ depositIndex: row.deposit_index, depositFactory: row.deposit_factory }))
    return `${row.status}|${row.updated_at}`;
  // A live deposit's confirmations grow with the heads of its currency's networks (each entry's), without the invoice changing.
  const heads = await tx.db
    .selectFrom("currencies as c")
    .innerJoin("networks as n", "n.name", "c.network")
    .select("n.head_block")
    .where((eb) => eb.or([eb("c.ticker", "=", row.currency), eb("c.symbol", "=", row.currency)]))
    .orderBy("n.name")
    .execute();
  return `${row.status}|${row.updated_at}|${heads.map((h) => h.head_block ?? "").join(",")}`;
}

/** What the payer is offered an invoice's networks with. */
interface Offer {
  rails: PaymentRails;
  /** The configured networks; empty for an invoice that is not a live deposit. */
  chains: ReadonlyMap<string, NetworkRow>;
  /** The deposit address while the invoice takes payments, else null (no payment URI). */
  address: string | null;
  due: bigint;
  decimals: number;
}

/**
 * The networks a crypto invoice is payable on (product §12, §23): every entry of its currency (the
 * one it names when it was asked by internalTicker) that passes the gate of `rails`, each with its
 * EIP-681 URI for the amount due in that entry's units, to the same deposit address. In live mode
 * only a live deposit is payable (any other address is one nobody holds a key for).
 */
async function payNetworks(tx: Tx, i: Invoice, offer: Offer): Promise<PayNetwork[]> {
  const { rails, chains, address, due, decimals } = offer;
  const all = await entriesOf(tx, i.currency);
  const entries: Currency[] = all.filter((e) => !isFiat(e) && (i.currencyEntry ?? e.ticker) === e.ticker);
  const live = isLiveDeposit(i);
  const offered: PayNetwork[] = [];
  for (const e of entries) {
    const rail = paymentRail(e, rails);
    if (!rail.ok || (rail.value === "evm" && !live)) continue;
    const chainId = live ? (chains.get(e.network)?.chainId ?? null) : chainIdOf(e.network, rails.mode === "sandbox");
    if (live && chainId === null) continue;
    // In the entry's units; an entry with fewer decimals than the invoice's units rounds up (the payer pays enough).
    const up = e.decimals >= decimals ? 0n : 10n ** BigInt(decimals - e.decimals) - 1n;
    const amount = inUnitsOf(due + up, decimals, e.decimals);
    offered.push({
      name: e.network,
      chainId,
      internalTicker: e.internalTicker,
      contractAddress: e.contractAddress,
      paymentUri:
        address !== null && chainId !== null
          ? paymentUri({ address, chainId, contractAddress: e.contractAddress, amountMinor: amount })
          : null,
      authorization: live && address !== null && e.contractAddress !== null ? (e.authorization ?? null) : null,
      amountDueMinor: amount,
    });
  }
  return offered;
}

/**
 * The status as offered on the network the payer chose (product §23): that network's name, chain id
 * and payment URI; the invoice's first network when `name` is absent or not one of its networks.
 */
export function onNetwork(s: PayStatus, name: string | undefined): PayStatus {
  const chosen = s.networks.find((n) => n.name === name);
  if (chosen === undefined || chosen.name === s.network) return s;
  return {
    ...s,
    network: chosen.name,
    chainId: chosen.chainId,
    paymentUri: s.paymentUri === null ? null : chosen.paymentUri,
  };
}
