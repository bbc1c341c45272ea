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
 * (`data.invoice` or `data.request`). A body that cannot be read still gives a sentence from the type.
 */
export function describeEvent(type: EventType, body: string): string {
  let data: { invoice?: InvoiceFacts; request?: RequestFacts } = {};
  try {
    const parsed = JSON.parse(body) as { data?: typeof data };
    data = parsed.data ?? {};
  } catch {
    data = {};
  }
  const [subject = "", outcome = ""] = type.split(".");
  if (subject === "invoice") return invoiceSentence(outcome, data.invoice ?? {});
  const r = data.request ?? {};
  const money = `${text(r.amount) ?? "?"} ${text(r.currency) ?? ""}`.trim();
  const noun = subject === "refund" ? "A refund" : "A withdrawal";
  return outcome === "completed"
    ? `${noun} of ${money} was paid out.`
    : `${noun} of ${money} failed; the amount is back in your balance.`;
}
