// The payer's status as the page reads it: the body of GET /pay/{id}/status and of each live event.
import type { PayStatus } from "../../store/payStatus.ts";

/** What GET /pay/{id}/status answers: exactly the fields of product §13. */
export function statusBody(s: PayStatus) {
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
    networks: s.networks,
  };
}
