// POST /x402/v1/settle (product §28): an x402 payment becomes one invoice of the merchant and one stored authorization (idempotent on its replay key), the hot wallet submits it once through the outbox, and the settle answers once it is mined, or `settlement_pending` when not in time.
import type { Hex } from "../domain/chain.ts";
import { newRowId } from "../domain/ids.ts";
import { assert } from "../domain/result.ts";
import { X402_REASONS, x402InvoiceExpiry, x402InvoiceKey } from "../domain/x402.ts";
import { hotTransactionsOf } from "../store/hotTransactions.ts";
import type { Tx } from "../store/store.ts";
import {
  acceptAuthorization,
  findAuthorization,
  findAuthorizationByKey,
  firstPaymentTransaction,
  type WalletAuthorization,
} from "../store/walletAuthorizations.ts";
import type { CheckOnChain } from "./acceptWalletAuthorization.ts";
import type { ServiceContext } from "./context.ts";
import { type CreateBody, createInvoiceFor } from "./createInvoice.ts";
import { type Outcome, refuse } from "./refusal.ts";
import {
  checkRequest,
  checkSigned,
  type Invalid,
  invoiceAmountOf,
  isSamePayment,
  type X402Payment,
} from "./x402Facilitator.ts";

/** x402 v2 SettleResponse. */
export interface X402SettleResponse {
  success: boolean;
  errorReason?: string;
  errorMessage?: string;
  payer?: string;
  transaction: string;
  network: string;
}

export interface SettlePorts {
  checkOnChain: CheckOnChain;
  now: () => Date;
  /** How long the settle waits for its transaction to be mined before answering `settlement_pending`. */
  waitMs: number;
  /** How often it looks (the store's row, then the chain's receipt) while it waits. */
  pollMs: number;
}

/** The network the requirements name, for an answer to a body that did not parse. */
function networkOf(body: unknown): string {
  const requirements = (body as { paymentRequirements?: { network?: unknown } } | null)?.paymentRequirements;
  return typeof requirements?.network === "string" ? requirements.network : "";
}

function failure(i: Invalid, network: string, transaction = ""): X402SettleResponse {
  return {
    success: false,
    errorReason: i.reason,
    errorMessage: i.message,
    ...(i.payer === null ? {} : { payer: i.payer }),
    transaction,
    network,
  };
}

/**
 * Settles an x402 payment: checked exactly as /verify checks it (a repeat of a payment already
 * stored skips the chain's checks: its nonce is ours now), recorded as the merchant's invoice with
 * its authorization, submitted by the chain payout worker's next pass, and answered once mined.
 * Twenty settles of one payload, in parallel or after a crash, find one invoice and one row, so
 * one transaction, and answer the same.
 */
export async function settleX402Payment(
  ctx: ServiceContext,
  input: { merchantId: string; body: unknown; ports: SettlePorts },
): Promise<Outcome<X402SettleResponse, "node_unavailable">> {
  const now = input.ports.now();
  const checked = await checkRequest(ctx, input.body, now);
  if (!checked.ok) return { ok: true, value: failure(checked.invalid, networkOf(input.body)) };
  const { payment } = checked;
  const payer = payment.signed.from;
  const stored = await findAuthorizationByKey(ctx.store, payment.key);
  if (stored !== null && !isSamePayment(stored, payment)) {
    const used = { reason: X402_REASONS.nonceUsed, message: "this authorization's nonce was already used", payer };
    return { ok: true, value: failure(used, payment.caip2) };
  }
  if (stored === null) {
    const signed = await checkSigned(payment, input.ports.checkOnChain, now);
    if (!signed.ok) return signed;
    if (signed.value !== null) return { ok: true, value: failure(signed.value, payment.caip2) };
  }
  const recorded = await recordX402Payment(ctx, input.merchantId, payment, now);
  if (!recorded.ok) {
    const { detail } = recorded.refusal;
    const code: string = recorded.refusal.code;
    const reason =
      code === "authorization_nonce_used" || code === "idempotency_key_reused"
        ? X402_REASONS.nonceUsed
        : X402_REASONS.settleRefused;
    return { ok: true, value: failure({ reason, message: `${code}: ${detail}`, payer }, payment.caip2) };
  }
  return { ok: true, value: await awaitMined(ctx, payment, recorded.value, input.ports) };
}

/** The invoice of the payment, as CreateInvoice takes it: the same body for every settle of one payload. */
function invoiceBodyOf(payment: X402Payment): CreateBody {
  const url = payment.resource?.url ?? null;
  const what = payment.resource?.description || "x402 payment";
  return {
    currency: payment.entry.ticker,
    amount: invoiceAmountOf(payment),
    idempotencyKey: x402InvoiceKey(payment.key),
    description: (url === null ? what : `${what} (${url})`).slice(0, 1000),
    ...(url === null ? {} : { order_no: url.slice(0, 255) }),
    expiresAt: x402InvoiceExpiry(payment.signed.validBefore),
  };
}

/**
 * Makes (or finds, by the replay key as its idempotency key) the merchant's invoice and stores the
 * authorization in the same transaction. A key already stored for another invoice (the payer's page,
 * another merchant) is a used nonce; an invoice whose payer would owe more than the value (fees the
 * merchant passes on) cannot be paid by it: both roll back.
 */
async function recordX402Payment(ctx: ServiceContext, merchantId: string, payment: X402Payment, now: Date) {
  let stored: WalletAuthorization | null = null;
  const alongside = async (tx: Tx, loaded: { invoice: { id: string; finalAmountMinor: bigint } }) => {
    const a = await acceptAuthorization(
      tx,
      {
        ...payment.signed,
        ...payment.key,
        id: newRowId(),
        invoiceId: loaded.invoice.id,
        currency: payment.entry.internalTicker,
        value: payment.terms.value,
      },
      now.toISOString(),
    );
    if (a.invoiceId !== loaded.invoice.id || !isSamePayment(a, payment))
      refuse("authorization_nonce_used", "This authorization's nonce was already used.", "/");
    if (loaded.invoice.finalAmountMinor !== payment.terms.value)
      refuse("authorization_value", `The invoice asks ${loaded.invoice.finalAmountMinor} units, not the value.`, "/");
    stored = a;
  };
  const created = await createInvoiceFor(ctx, merchantId, invoiceBodyOf(payment), alongside);
  if (!created.ok) return created;
  const row = stored as WalletAuthorization | null;
  assert(row !== null, "an x402 invoice is stored with its authorization");
  return { ok: true as const, value: row.id };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits (bounded) for the submission to be mined; not in time: `settlement_pending`, finished from the chain later. */
async function awaitMined(ctx: ServiceContext, payment: X402Payment, authorizationId: string, ports: SettlePorts) {
  const deadline = Date.now() + ports.waitMs;
  for (;;) {
    const answer = await minedAnswer(ctx, payment, authorizationId);
    if (answer.done) return answer.response;
    if (Date.now() >= deadline) {
      const message = "submitted, not mined yet: settle again to learn its outcome";
      return failure(
        { reason: X402_REASONS.settlementPending, message, payer: payment.signed.from },
        payment.caip2,
        answer.hash ?? "",
      );
    }
    await sleep(ports.pollMs);
  }
}

type Mined = { done: true; response: X402SettleResponse } | { done: false; hash: string | null };

/** Where the authorization's submission is: settled or failed in the store, else mined or not on chain. */
async function minedAnswer(ctx: ServiceContext, payment: X402Payment, id: string): Promise<Mined> {
  const [a, sent] = await Promise.all([
    findAuthorization(ctx.store, id),
    hotTransactionsOf(ctx.store, "submission", id),
  ]);
  const payer = payment.signed.from;
  const success = (hash: string): Mined => ({
    done: true,
    response: { success: true, payer, transaction: hash, network: payment.caip2 },
  });
  const failed = (reason: Invalid["reason"], message: string, hash = ""): Mined => ({
    done: true,
    response: failure({ reason, message, payer }, payment.caip2, hash),
  });
  if (a === null || a.state === "accepted") return { done: false, hash: null };
  if (a.state === "expired") return failed(X402_REASONS.validBefore, "its window closed before it was submitted");
  const reverted = sent.find((t) => t.receiptStatus === "reverted");
  if (a.state === "failed")
    return reverted
      ? failed(X402_REASONS.transactionFailed, "the submission reverted", reverted.hash)
      : failed(X402_REASONS.simulationFailed, a.failure ?? "the submission would revert");
  const succeeded = sent.find((t) => t.receiptStatus === "success");
  if (a.state === "settled") {
    // Settled by another's submission of the same signature (a front-run): the transfer it made.
    const hash = succeeded?.hash ?? (await firstPaymentTransaction(ctx.store, a.invoiceId));
    if (hash !== null) return success(hash);
  }
  // Contested (a reverted submission: another's transaction may have moved the tokens), or
  // submitted: a mined success is enough to answer; a revert is searched on, so it stays pending.
  if (a.state === "contested") return { done: false, hash: sent[sent.length - 1]?.hash ?? null };
  const client = ctx.chains.for(payment.network.name, payment.network.rpcUrl);
  for (const t of [...sent].reverse()) {
    const receipt = await client.receipt(t.hash as Hex);
    if (!receipt.ok || receipt.value === null) continue;
    if (receipt.value.status === "success") return success(t.hash);
  }
  return { done: false, hash: sent[sent.length - 1]?.hash ?? null };
}
