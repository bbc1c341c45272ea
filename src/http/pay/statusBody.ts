// The payer's status as the page reads it: the body of GET /pay/{id}/status and of each live event.
import { typedDataFor } from "../../domain/walletAuthorization.ts";
import type { PayNetwork, PayStatus } from "../../store/payStatus.ts";

/**
 * The typed data to sign on a network that takes signed payments (product §28): to the hot
 * wallet, for the amount due in the entry's units, valid until the invoice expires. Without a hot
 * wallet (sandbox, or none set) nothing is signed.
 */
function signingTerms(n: PayNetwork, s: PayStatus, hotWallet: string | null) {
  if (n.authorization === null || hotWallet === null || n.chainId === null || n.contractAddress === null) return null;
  if (s.expiresAt === null) return null;
  return typedDataFor(n.authorization, {
    chainId: n.chainId,
    token: n.contractAddress,
    hotWallet,
    value: n.amountDueMinor,
    validBefore: BigInt(Math.floor(Date.parse(s.expiresAt) / 1000)),
    invoiceId: s.id,
  });
}

function networkBody(n: PayNetwork, s: PayStatus, hotWallet: string | null) {
  const { name, chainId, internalTicker, contractAddress, paymentUri } = n;
  return { name, chainId, internalTicker, contractAddress, paymentUri, authorization: signingTerms(n, s, hotWallet) };
}

/** What GET /pay/{id}/status answers: the fields of product §13, and each network's signed-payment terms (§28). */
export function statusBody(s: PayStatus, hotWallet: string | null = null) {
  return {
    id: s.id,
    status: s.status,
    currency: s.currency,
    network: s.network,
    address: s.address,
    paymentUri: s.paymentUri,
    amountDue: s.amountDue,
    finalAmount: s.finalAmount,
    paidAmount: s.paidAmount,
    expiresAt: s.expiresAt,
    payments: s.payments,
    merchant: { name: s.merchant.name, logo: s.merchant.logo },
    redirectUrl: s.redirectUrl,
    networks: s.networks.map((n) => networkBody(n, s, hotWallet)),
  };
}
