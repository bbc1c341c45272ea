// Simulated payments of the sandbox (the sandbox API and the payer's page buttons): record one payment, or decide an invoice held in aml_check.
import { randomBytes, randomUUID } from "node:crypto";
import { type Static, Type } from "typebox";
import { isFiat } from "../domain/currencies.ts";
import { type InvoiceAmountError, parseInvoiceAmount } from "../domain/invoices.ts";
import { invariantViolation } from "../domain/result.ts";
import { looksLikeAddress, simulatedVerdict } from "../domain/screening.ts";
import { Nullable } from "../domain/shapes.ts";
import { findCurrency } from "../store/currencies.ts";
import { findInvoiceForMerchant, type Invoice, type LoadedInvoice, lockInvoice } from "../store/invoices.ts";
import { nowIso, type Tx } from "../store/store.ts";
import type { ServiceContext } from "./context.ts";
import { AmountInput } from "./createInvoice.ts";
import { type DecideAmlRefusal, decideAmlOnInvoice } from "./decideAml.ts";
import { type PaymentError, recordPayment } from "./recordPayment.ts";
import { type Outcome, refuse, withRefusals } from "./refusal.ts";
import { screenAddress } from "./screening.ts";

/** The card payment provider of the sandbox: `api_source` of fiat invoices paid here. */
export const SANDBOX_CARD_PROVIDER = "sandbox_card";

export const PaymentBody = Type.Object(
  {
    amount: Type.Optional(AmountInput),
    fromAddress: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 200 }))),
    txId: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    confirmed: Type.Optional(Type.Boolean()),
    amlFlag: Type.Optional(Type.Boolean()),
  },
  {
    additionalProperties: false,
    description:
      "amount defaults to what is still due, txId to a new one, confirmed to true, amlFlag to false. A known txId sent again with confirmed: true confirms that payment.",
  },
);

export const AmlBody = Type.Object(
  { decision: Type.Union([Type.Literal("clear"), Type.Literal("block")]) },
  { additionalProperties: false },
);

/** What a simulated payment refuses. */
export type SandboxPaymentRefusal =
  | "invoice_not_found"
  | "sender_address_not_applicable"
  | InvoiceAmountError
  | "invoice_not_payable"
  | "payment_conflict"
  | "nothing_due"
  | "invoice_status_changed";

const refuseNotFound = () => refuse("invoice_not_found", "No invoice with this id.", "/", null);

/** Refuses a payment the settlement rules refused (none names a field). */
function refusePayment(error: PaymentError, detail: string | undefined): never {
  switch (error) {
    case "invoice_not_payable":
      return refuse(error, `The invoice takes no more payments: ${detail ?? "it is settled"}.`, "/", null);
    case "payment_conflict":
      return refuse(error, `${detail ?? "This txId was recorded with other details"}.`, "/", null);
    case "nothing_due":
      return refuse(error, "Nothing is due: payments seen already cover final_amount; send an amount.", "/", null);
    case "status_changed":
      return refuse("invoice_status_changed", "The invoice changed meanwhile; read it and retry.", "/", null);
    case "transition_refused":
      throw invariantViolation(`settlement decided a transition the table refuses (${detail})`);
  }
}

/** Locks the merchant's invoice for the rest of the transaction; another merchant's invoice is a 404. */
async function lockOwn(tx: Tx, merchantId: string, invoiceId: string): Promise<Invoice> {
  const invoice = await lockInvoice(tx, invoiceId, merchantId);
  if (!invoice) return refuseNotFound();
  return invoice;
}

async function answer(tx: Tx, merchantId: string, invoiceId: string): Promise<LoadedInvoice> {
  const loaded = await findInvoiceForMerchant(tx, merchantId, invoiceId);
  if (!loaded) return refuseNotFound();
  return loaded;
}

export type SandboxPayment = Static<typeof PaymentBody>;

/**
 * One simulated payment into the merchant's invoice: the sandbox API and the payer's page sandbox
 * buttons both call this, so the rules live once. A refusal rolls its transaction back.
 */
export async function sandboxPay(
  ctx: ServiceContext,
  merchantId: string,
  invoiceId: string,
  body: SandboxPayment,
): Promise<Outcome<LoadedInvoice, SandboxPaymentRefusal>> {
  // The simulated flag is one more screening source (product §21): the same code as live mode.
  const screened =
    typeof body.fromAddress === "string" && looksLikeAddress(body.fromAddress)
      ? await screenAddress(ctx.screening, body.fromAddress, body.amlFlag ?? false)
      : simulatedVerdict(body.amlFlag ?? false);
  const amlFlag = screened === "clear" ? body.amlFlag : true;
  return withRefusals(() =>
    ctx.store.transaction(async (tx) => {
      const invoice = await lockOwn(tx, merchantId, invoiceId);
      const currency = await findCurrency(tx, invoice.currency);
      if (!currency) throw invariantViolation(`invoice ${invoice.id} has a catalog currency`);
      const byCard = isFiat(currency);
      if (byCard && body.fromAddress !== undefined && body.fromAddress !== null) {
        const detail = "Card payments have no sender address.";
        refuse("sender_address_not_applicable", detail, "/fromAddress", "must be null or absent for a fiat invoice");
      }
      let amountMinor: bigint | undefined;
      if (body.amount !== undefined) {
        const parsed = parseInvoiceAmount(body.amount, currency.decimals);
        if (!parsed.ok) {
          refuse(parsed.error, `amount: ${parsed.detail ?? "is invalid"}.`, "/amount", parsed.detail ?? "is invalid");
        }
        amountMinor = parsed.value;
      }
      const txId = body.txId ?? (byCard ? `card_${randomUUID()}` : `0x${randomBytes(32).toString("hex")}`);
      const recorded = await recordPayment(
        tx,
        invoice,
        {
          txId,
          ...(amountMinor === undefined ? {} : { amountMinor }),
          ...(body.fromAddress === undefined ? {} : { fromAddress: body.fromAddress }),
          ...(body.confirmed === undefined ? {} : { confirmed: body.confirmed }),
          ...(amlFlag === undefined ? {} : { amlFlag }),
          provider: byCard ? SANDBOX_CARD_PROVIDER : null,
        },
        nowIso(),
        ctx.config.publicBaseUrl,
      );
      if (!recorded.ok) refusePayment(recorded.error, recorded.detail);
      return answer(tx, merchantId, invoice.id);
    }),
  );
}

/** Screening decision on the merchant's invoice in aml_check (sandbox API and payer's page): the operator's use case, on the merchant's own invoice. */
export async function sandboxDecideAml(
  ctx: ServiceContext,
  merchantId: string,
  invoiceId: string,
  decision: "clear" | "block",
): Promise<Outcome<LoadedInvoice, DecideAmlRefusal>> {
  return decideAmlOnInvoice(ctx, invoiceId, decision, `sandbox:${merchantId}`, merchantId);
}
