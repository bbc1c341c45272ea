// The dashboard's recent activity as sentences (product §14): what an event says, in words, from its stored body.
import type { EventType } from "./callbackEvent.ts";

interface InvoiceFacts {
  currency?: unknown;
  final_amount?: unknown;
  paid_amount?: unknown;
  order_no?: unknown;
}

interface RequestFacts {
  currency?: unknown;
  amount?: unknown;
}

function text(value: unknown): string | null {
  return typeof value === "string" && value !== "" ? value : null;
}

interface SubscriptionFacts {
  customer?: { reference?: unknown };
  period?: unknown;
  openInvoice?: { amount?: unknown; currency?: unknown; period?: unknown } | null;
}

function subscriptionSentence(outcome: string, s: SubscriptionFacts): string {
  const customer = text(s.customer?.reference);
  const whose = customer === null ? "A subscription" : `${customer}'s subscription`;
  const period = typeof s.period === "number" ? ` ${s.period}` : "";
  const invoice = s.openInvoice ?? {};
  switch (outcome) {
    case "invoice_created": {
      const money = `${text(invoice.amount) ?? "?"} ${text(invoice.currency) ?? ""}`.trim();
      const next = typeof invoice.period === "number" ? ` for period ${invoice.period}` : "";
      return `${whose} has a new invoice of ${money}${next}.`;
    }
    case "renewed":
      return `${whose} was paid for period${period}.`;
    case "past_due":
      return `${whose} is past due: period${period} is not paid yet.`;
    case "unpaid":
      return `${whose} is unpaid: its grace ended without payment.`;
    case "canceled":
      return `${whose} was canceled.`;
    default:
      return `${whose} is now ${outcome}.`;
  }
}

interface DepositFacts {
  customer?: unknown;
  amount?: unknown;
  currency?: unknown;
  network?: unknown;
  creditedAmount?: unknown;
}

/** What each step of a held deposit's refund (deposit.refund_<step>) did, after "<the deposit>". */
const DEPOSIT_REFUND_SENTENCES: Record<string, string> = {
  refund_claimed: ": its payer claimed its refund.",
  refund_completed: " was refunded to its payer.",
  refund_failed: ": its refund's payout failed; it is held again.",
  refund_expired: ": nobody claimed its refund in time; it is held again.",
  refund_awaiting_approval: ": its refund awaits approval.",
  refund_approved: ": its refund was approved.",
  refund_rejected: ": its refund was rejected.",
};

/** A transfer to a customer's deposit address (product §30): credited, undone by a reorganisation, or a step of its refund. */
function depositSentence(outcome: string, d: DepositFacts): string {
  const customer = text(d.customer);
  const money = `${text(d.amount) ?? "?"} ${text(d.currency) ?? ""}`.trim();
  const network = text(d.network);
  const deposit = `${customer === null ? "A deposit" : `${customer}'s deposit`} of ${money}${network === null ? "" : ` on ${network}`}`;
  switch (outcome) {
    case "completed": {
      const credited = text(d.creditedAmount);
      return credited === null ? `${deposit} was credited.` : `${deposit} was credited: ${credited} after fees.`;
    }
    case "reversed":
      return `${deposit} was undone by a reorganisation of the chain; nothing was credited.`;
    default: {
      const step = DEPOSIT_REFUND_SENTENCES[outcome];
      return step === undefined ? `${deposit} is now ${outcome}.` : `${deposit}${step}`;
    }
  }
}

function invoiceSentence(status: string, i: InvoiceFacts): string {
  const currency = text(i.currency) ?? "";
  const total = `${text(i.final_amount) ?? "?"} ${currency}`.trim();
  const paid = `${text(i.paid_amount) ?? "0"} ${currency}`.trim();
  const order = text(i.order_no);
  const invoice = order === null ? "An invoice" : `The invoice for order ${order}`;
  const ofInvoice = order === null ? "an invoice" : `the invoice for order ${order}`;
  switch (status) {
    case "pending":
      return `${invoice} of ${total} awaits payment.`;
    case "processing":
      return `${invoice} received ${paid} of ${total}; it waits for confirmations or the rest.`;
    case "completed":
      return text(i.paid_amount) === null ? `${invoice} was paid.` : `${invoice} was paid: ${paid} received.`;
    case "failed":
      return `${invoice} expired part-paid: ${paid} of ${total} received.`;
    case "expired":
      return `${invoice} of ${total} expired unpaid.`;
    case "aml_check":
      return `A payment to ${ofInvoice} is under screening review.`;
    case "aml_block":
      return `A payment to ${ofInvoice} was blocked by screening; it is not credited.`;
    case "refund_processing":
      return `A refund of ${ofInvoice} (${paid}) is under way.`;
    case "refunded":
      return `${invoice} was refunded (${paid}).`;
    default:
      return `${invoice} is now ${status}.`;
  }
}

/**
 * One English sentence for an event, from the exact body the event list and callbacks carry
 * (`data.invoice`, `data.request`, `data.subscription` or `data.deposit`). A body that cannot be read still gives a sentence from the type.
 */
export function describeEvent(type: EventType, body: string): string {
  let data: {
    invoice?: InvoiceFacts;
    request?: RequestFacts;
    subscription?: SubscriptionFacts;
    deposit?: DepositFacts;
  } = {};
  try {
    const parsed = JSON.parse(body) as { data?: typeof data };
    data = parsed.data ?? {};
  } catch {
    data = {};
  }
  const [subject = "", outcome = ""] = type.split(".");
  if (subject === "invoice") return invoiceSentence(outcome, data.invoice ?? {});
  if (subject === "subscription") return subscriptionSentence(outcome, data.subscription ?? {});
  if (subject === "deposit") return depositSentence(outcome, data.deposit ?? {});
  const r = data.request ?? {};
  const money = `${text(r.amount) ?? "?"} ${text(r.currency) ?? ""}`.trim();
  const noun = subject === "refund" ? "A refund" : "A withdrawal";
  return outcome === "completed"
    ? `${noun} of ${money} was paid out.`
    : `${noun} of ${money} failed; the amount is back in your balance.`;
}
