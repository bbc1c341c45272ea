// Payout repository: the debit and the queued payout of an accepted operation, work claiming, reports, settlement and reversal.
import { randomUUID } from "node:crypto";
import { type Kysely, sql } from "kysely";
import { type PayoutEventType, payoutEventType } from "../domain/callbackEvent.ts";
import type { DepositObject } from "../domain/depositAddresses.ts";
import { guardOn } from "../domain/guards.ts";
import {
  type LedgerCause,
  type Movement,
  merchantAccount,
  movement,
  type Posting,
  payoutApprovalHoldAccount,
  SYSTEM_ACCOUNTS,
  transfer,
} from "../domain/ledger.ts";
import {
  canTransition,
  choosePayoutRail,
  isPayoutOperation,
  isPayoutRail,
  isPayoutState,
  isSettled,
  type Payout,
  type PayoutOperation,
  type PayoutOutcome,
  type PayoutRail,
  type PayoutRailPolicy,
  type PayoutState,
} from "../domain/payout.ts";
import { decidePayout, limitsAt, type PolicyDecision } from "../domain/payoutPolicy.ts";
import {
  type PublicRefundRequestObject,
  type PublicWithdrawalRequestObject,
  publicRefundRequest,
  publicWithdrawalRequest,
} from "../domain/payoutRequests.ts";
import { assert, err, ok, type Result } from "../domain/result.ts";
import { currentDepositObject } from "./depositAddresses.ts";
import type { Dialect } from "./dialect.ts";
import { recordPayoutEvent } from "./events.ts";
import { postMovement } from "./ledger.ts";
import { findMerchant } from "./merchants.ts";
import { findPayoutPolicy, insertApprovalRequest, paidInWindow } from "./payoutPolicies.ts";
import { placeholder, preparedQuery, preparedStatement } from "./prepared.ts";
import { recordRefundStepEvent } from "./refundEvents.ts";
import { findRefundView, isInvoiceRefund, settleRefund } from "./refunds.ts";
import type { Database, PayoutsTable } from "./schema.ts";
import type { Tx } from "./store.ts";
import { findWithdrawalView } from "./withdrawals.ts";

export type { Payout } from "../domain/payout.ts";

function fromRow(r: PayoutsTable): Payout {
  assert(isPayoutState(r.state), `payout ${r.request_id} has a known state`);
  assert(isPayoutOperation(r.operation), `payout ${r.request_id} has a known operation`);
  return {
    requestKey: r.request_id,
    operation: r.operation,
    merchantId: r.merchant_id,
    currency: r.currency,
    amountMinor: BigInt(r.amount),
    destination: r.destination,
    ledgerCause: r.ledger_cause as LedgerCause,
    state: r.state,
    rail: r.rail !== null && isPayoutRail(r.rail) ? r.rail : null,
    processor: r.processor,
    processorStatus: r.processor_status,
    processorTxId: r.processor_tx_id,
    claimToken: r.claim_token,
    leaseUntil: r.lease_until,
    attempts: Number(r.attempts),
    nextCheckAt: r.next_check_at,
    lastError: r.last_error,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    stateChangedAt: r.state_changed_at,
    settledAt: r.settled_at,
  };
}

/** The accepted side of a withdrawal or refund: what leaves the merchant's balance and what is paid out. */
export interface PayoutOrder {
  /** Lowercased request id of the signed operation; also the payout's id. */
  requestKey: string;
  operation: PayoutOperation;
  merchantId: string;
  /** Ledger cause of the debit (and of its reversal). */
  cause: LedgerCause;
  /** What leaves the merchant's available balance. */
  debit: { currency: string; amount: bigint };
  /**
   * The account debited when it is not the merchant's available balance: a held deposit's refund
   * is paid from the merchant's deposit hold (product §30), and its reversal credits the hold back.
   */
  debitAccount?: string | undefined;
  /** What the payout processor sends, and where; in another currency only when converted. */
  payout: { currency: string; amount: bigint; destination: string };
  /** The payout's network fee, in the payout currency, paid out of the debit (partial refunds, product §25). */
  networkFee?: bigint | undefined;
  memo: string;
  /**
   * What this service pays out by (app/payoutProcessors.ts payoutRailPolicy): the payout's rail is
   * chosen from it when it is queued (payoutRailFor). Left out only by repository tests: a payout
   * without a rail waits until the payout worker assigns it one (assignPayoutRails).
   */
  railPolicy?: PayoutRailPolicy | undefined;
}

/** The rail of a payout being queued, or null when its order carries no policy. */
async function railOfOrder(
  tx: Tx,
  order: Pick<PayoutOrder, "requestKey" | "operation" | "payout" | "railPolicy">,
): Promise<PayoutRail | null> {
  if (order.railPolicy === undefined) return null;
  const payout = { requestKey: order.requestKey, operation: order.operation, currency: order.payout.currency };
  return payoutRailFor(tx, order.railPolicy, payout);
}

const DEBIT_KIND = "debit";
const REVERSAL_KIND = "reversal";

function debitPostings(order: PayoutOrder): Posting[] {
  const merchant = order.debitAccount ?? merchantAccount(order.merchantId);
  const fee = order.networkFee ?? 0n;
  assert(fee >= 0n, "a payout's network fee is not negative");
  const feePostings = (from: string) =>
    fee > 0n ? transfer(from, SYSTEM_ACCOUNTS.networkFees, order.payout.currency, fee) : [];
  if (order.debit.currency === order.payout.currency) {
    assert(
      order.debit.amount === order.payout.amount + fee,
      "a payout in the debited currency pays the debited amount less its network fee",
    );
    return [
      ...transfer(merchant, SYSTEM_ACCOUNTS.payouts, order.debit.currency, order.payout.amount),
      ...feePostings(merchant),
    ];
  }
  // Converted: the conversion desk takes one currency in and gives the other out, each leg balanced.
  return [
    ...transfer(merchant, SYSTEM_ACCOUNTS.conversion, order.debit.currency, order.debit.amount),
    ...transfer(SYSTEM_ACCOUNTS.conversion, SYSTEM_ACCOUNTS.payouts, order.payout.currency, order.payout.amount),
    ...feePostings(SYSTEM_ACCOUNTS.conversion),
  ];
}

/** The ledger movement that debits an accepted payout's order (also what accept_withdrawal posts, migration 016). */
export function debitMovement(order: PayoutOrder): Movement {
  return movement({
    cause: order.cause,
    causeId: order.requestKey,
    kind: DEBIT_KIND,
    memo: order.memo,
    postings: debitPostings(order),
  });
}

/** Whether an accepted payout went out to its rail's queue or waits for approvals (product §31). */
export interface Accepted {
  awaitingApproval: boolean;
}

/** The processor status a payout waiting for approvals shows (the public status stays `processing`). */
export const AWAITING_APPROVAL_STATUS = "awaiting_approval";

/**
 * The merchant's payout policy for a payout being accepted: its row locked (PostgreSQL) so that
 * payouts of one merchant and currency take turns, and the rolling 24-hour sum read after that
 * lock, so it counts every payout committed before. No policy: no lock, no sum.
 */
async function policyDecision(
  tx: Tx,
  order: Pick<PayoutOrder, "merchantId" | "payout">,
  now: string,
): Promise<PolicyDecision> {
  const policy = await findPayoutPolicy(tx, order.merchantId, order.payout.currency, true);
  if (policy === null) return { kind: "send" };
  const limits = limitsAt(policy, now);
  if (limits.approvalsRequired === 0) return { kind: "send" };
  const paid = await paidInWindow(tx, order.merchantId, order.payout.currency, now);
  return decidePayout(limits, order.payout.amount, paid);
}

/**
 * Accepts a payout inside the signed operation's transaction: debits the merchant through the
 * ledger (refused when the balance does not cover it) and queues the payout for a worker, or,
 * over the merchant's payout policy, holds it for approvals (holdForApproval).
 */
export async function acceptPayout(
  tx: Tx,
  order: PayoutOrder,
  now: string,
): Promise<Result<Accepted, "insufficient_balance">> {
  const decision = await policyDecision(tx, order, now);
  const held = decision.kind === "await_approval";
  // The payout first and the debit last: on PostgreSQL the debit locks the merchant's balance row
  // until commit, so the fewer statements after it, the shorter other debits of that balance wait.
  await insertPayoutStatement(tx, {
    ...payoutRowArgs(order, now),
    rail: await railOfOrder(tx, order),
    state: held ? "awaiting_approval" : "queued",
    processorStatus: held ? AWAITING_APPROVAL_STATUS : null,
  });
  const posted = await postMovement(tx, debitMovement(order), now);
  if (!posted.ok) {
    assert(posted.error === "insufficient_balance", `request ${order.requestKey} is debited once`);
    // A refusal leaves no trace, even for a caller that goes on to commit.
    await deleteQueuedPayoutStatement(tx, { requestKey: order.requestKey });
    return err("insufficient_balance", `The ${order.debit.currency} balance does not cover this amount.`);
  }
  if (decision.kind === "await_approval") await holdForApproval(tx, order, decision, now);
  return ok({ awaitingApproval: held });
}

function payoutRowArgs(
  order: Pick<PayoutOrder, "requestKey" | "operation" | "merchantId" | "cause" | "payout">,
  now: string,
) {
  return {
    requestKey: order.requestKey,
    operation: order.operation,
    merchantId: order.merchantId,
    currency: order.payout.currency,
    amount: order.payout.amount.toString(),
    destination: order.payout.destination,
    cause: order.cause,
    now,
  };
}

const HOLD_KIND = "approval_hold";
const RELEASE_KIND = "approval_release";

/** The movement between the payouts account and the merchant's approval hold, of a payout's amount. */
function holdMovement(
  payout: Pick<Payout, "requestKey" | "merchantId" | "ledgerCause" | "currency" | "amountMinor">,
  kind: typeof HOLD_KIND | typeof RELEASE_KIND,
): Movement {
  const held = payoutApprovalHoldAccount(payout.merchantId);
  const [from, to] = kind === HOLD_KIND ? [SYSTEM_ACCOUNTS.payouts, held] : [held, SYSTEM_ACCOUNTS.payouts];
  return movement({
    cause: payout.ledgerCause,
    causeId: payout.requestKey,
    kind,
    memo: kind === HOLD_KIND ? "payout held for approval" : "payout approved: released to its rail",
    postings: transfer(from, to, payout.currency, payout.amountMinor),
  });
}

/**
 * A payout over its merchant's policy: its money moves on from the payouts account to the
 * merchant's approval hold (a movement of its own cause), its approval request is recorded, and
 * the `<operation>.awaiting_approval` event.
 */
async function holdForApproval(
  tx: Tx,
  order: Pick<PayoutOrder, "requestKey" | "operation" | "merchantId" | "cause" | "payout">,
  decision: Extract<PolicyDecision, { kind: "await_approval" }>,
  now: string,
): Promise<void> {
  const payout = {
    requestKey: order.requestKey,
    merchantId: order.merchantId,
    ledgerCause: order.cause,
    currency: order.payout.currency,
    amountMinor: order.payout.amount,
  };
  const posted = await postMovement(tx, holdMovement(payout, HOLD_KIND), now);
  assert(posted.ok, `payout ${order.requestKey} is held once`);
  await insertApprovalRequest(
    tx,
    {
      requestKey: order.requestKey,
      merchantId: order.merchantId,
      approvalsRequired: decision.approvalsRequired,
      reason: decision.reason,
    },
    now,
  );
  await recordApprovalEvent(tx, { ...order, requestKey: order.requestKey }, "awaiting_approval", now);
}

/**
 * Releases a payout that got its approvals to its rail, once: awaiting_approval → queued under
 * the payout's row (the caller holds its approval request's lock), the held money moved back to
 * the payouts account, and the `<operation>.approved` event. False when it no longer waits.
 */
export async function releaseApprovedPayout(tx: Tx, requestKey: string, now: string): Promise<boolean> {
  const [row] = await (tx.dialect === "postgres" ? lockPayoutQuery : findPayoutQuery)(tx, { requestKey });
  if (row?.state !== "awaiting_approval") return false;
  const payout = fromRow(row);
  const moved = await tx.db
    .updateTable("payouts")
    .set({ state: "queued", processor_status: null, updated_at: now, state_changed_at: now })
    .where("request_id", "=", requestKey)
    .where("state", "=", "awaiting_approval")
    .executeTakeFirst();
  assert(moved.numUpdatedRows === 1n, `payout ${requestKey} leaves awaiting_approval once`);
  const posted = await postMovement(tx, holdMovement(payout, RELEASE_KIND), now);
  assert(posted.ok, `payout ${requestKey} is released once`);
  await recordApprovalEvent(tx, payout, "approved", now);
  return true;
}

/**
 * The `<operation>.awaiting_approval|approved|rejected` event, with the request as it now stands;
 * a refund's through recordRefundStepEvent (a held deposit's is a deposit event).
 */
export async function recordApprovalEvent(
  tx: Tx,
  payout: Pick<Payout, "requestKey" | "operation" | "merchantId">,
  step: "awaiting_approval" | "approved" | "rejected",
  now: string,
): Promise<void> {
  if (payout.operation === "refund") {
    await recordRefundStepEvent(tx, { merchantId: payout.merchantId, refundId: payout.requestKey, step }, now);
    return;
  }
  await recordWithdrawalEvent(tx, payout, `withdrawal.${step}`, now);
}

/** A withdrawal's event with its request object as it now stands, to the merchant's default callback URL. */
async function recordWithdrawalEvent(
  tx: Tx,
  payout: Pick<Payout, "requestKey" | "merchantId">,
  type: PayoutEventType,
  now: string,
): Promise<void> {
  const merchant = await findMerchant(tx, payout.merchantId);
  assert(merchant !== null, `payout ${payout.requestKey} has its merchant`);
  const view = await findWithdrawalView(tx, payout.requestKey);
  assert(view !== null, `payout ${payout.requestKey} has its withdrawal`);
  await recordPayoutEvent(
    tx,
    {
      merchantId: payout.merchantId,
      type,
      subjectId: payout.requestKey,
      request: publicWithdrawalRequest(view),
      callbackUrl: merchant.defaultCallbackUrl,
    },
    now,
  );
}

/**
 * The debit of a payout whose destination is not known yet (a refund its payer claims, product
 * §25): the same movement acceptPayout posts, without the payout; queueClaimedPayout adds it once
 * the destination is known, and a reversal (reverseUnqueuedDebit) credits it back if it never is.
 */
export async function postPayoutDebit(
  tx: Tx,
  order: PayoutOrder,
  now: string,
): Promise<Result<void, "insufficient_balance">> {
  const posted = await postMovement(tx, debitMovement(order), now);
  if (posted.ok) return ok(undefined);
  assert(posted.error === "insufficient_balance", `request ${order.requestKey} is debited once`);
  return err("insufficient_balance", `The ${order.debit.currency} balance does not cover this amount.`);
}

/**
 * Queues the payout of a debit posted earlier by postPayoutDebit, now that its destination is
 * known; over the merchant's payout policy it waits for approvals instead, like acceptPayout's.
 */
export async function queueClaimedPayout(
  tx: Tx,
  order: Pick<PayoutOrder, "requestKey" | "operation" | "merchantId" | "cause" | "payout" | "railPolicy">,
  now: string,
): Promise<Accepted> {
  const decision = await policyDecision(tx, order, now);
  const held = decision.kind === "await_approval";
  await insertPayoutStatement(tx, {
    ...payoutRowArgs(order, now),
    rail: await railOfOrder(tx, order),
    state: held ? "awaiting_approval" : "queued",
    processorStatus: held ? AWAITING_APPROVAL_STATUS : null,
  });
  if (decision.kind === "await_approval") await holdForApproval(tx, order, decision, now);
  return { awaitingApproval: held };
}

/** Credits back the debit of a payout that was never queued (an expired refund claim). */
export function reverseUnqueuedDebit(
  tx: Tx,
  debit: { cause: LedgerCause; requestKey: string },
  memo: string,
  now: string,
): Promise<void> {
  return reverseDebitMovement(tx, debit.cause, debit.requestKey, memo, now);
}

// Every accepted withdrawal or refund runs these: compiled once (see prepared.ts).
const insertPayoutStatement = preparedStatement(
  [
    "requestKey",
    "operation",
    "merchantId",
    "currency",
    "amount",
    "destination",
    "cause",
    "rail",
    "state",
    "processorStatus",
    "now",
  ] as const,
  (db, a) =>
    db.insertInto("payouts").values({
      request_id: a.requestKey,
      operation: a.operation,
      merchant_id: a.merchantId,
      currency: a.currency,
      amount: a.amount,
      destination: a.destination,
      ledger_cause: a.cause,
      state: a.state,
      rail: placeholder<string | null>(a.rail),
      processor: null,
      processor_status: placeholder<string | null>(a.processorStatus),
      processor_tx_id: null,
      claim_token: null,
      lease_until: null,
      attempts: 0,
      next_check_at: null,
      last_error: null,
      created_at: a.now,
      updated_at: a.now,
      state_changed_at: a.now,
      settled_at: null,
    }),
);

const deleteQueuedPayoutStatement = preparedStatement(["requestKey"] as const, (db, a) =>
  db.deleteFrom("payouts").where("request_id", "=", a.requestKey).where("state", "in", ["queued", "awaiting_approval"]),
);

const findPayoutQuery = preparedQuery(["requestKey"] as const, (db, a) =>
  db.selectFrom("payouts").selectAll().where("request_id", "=", a.requestKey),
);

export async function findPayout(tx: Tx, requestKey: string): Promise<Payout | null> {
  const [row] = await findPayoutQuery(tx, { requestKey });
  return row ? fromRow(row) : null;
}

export async function listPayouts(tx: Tx, filter: { state?: PayoutState; limit: number }): Promise<Payout[]> {
  const rows = await tx.db
    .selectFrom("payouts")
    .selectAll()
    .$if(filter.state !== undefined, (qb) => qb.where("state", "=", filter.state as PayoutState))
    .orderBy("created_at")
    .orderBy("request_id")
    .limit(filter.limit)
    .execute();
  return rows.map(fromRow);
}

/**
 * Claims up to `limit` queued payouts of one rail for one worker batch in one statement, so that no
 * two processes ever claim the same payout: PostgreSQL skips rows another claimer has locked, and
 * on SQLite the statement runs under the database write lock and re-checks the state. Without a
 * rail (repository tests, a test driving one processor over everything) any queued payout.
 */
export async function claimPayouts(
  tx: Tx,
  claim: {
    now: string;
    leaseUntil: string;
    limit: number;
    processor: string;
    rail?: PayoutRail | undefined;
  },
): Promise<Payout[]> {
  const { rail, ...rest } = claim;
  const { rows } =
    rail === undefined
      ? await (tx.dialect === "postgres" ? claimAnyLocking : claimAnySerialized)(tx, {
          ...rest,
          claimToken: randomUUID(),
        })
      : await (tx.dialect === "postgres" ? claimRailLocking : claimRailSerialized)(tx, {
          ...rest,
          rail,
          claimToken: randomUUID(),
        });
  return rows.map(fromRow).sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0));
}

type ClaimArgs = Record<"now" | "leaseUntil" | "limit" | "processor" | "claimToken" | "rail", string>;

// Every worker poll runs the claim (and the lease expiry below): compiled once per dialect (see
// prepared.ts). PostgreSQL skips rows another claimer has locked; SQLite needs no row locks.
function claimStatement(db: Kysely<Database>, dialect: Dialect, a: ClaimArgs, ofRail: boolean) {
  return (
    db
      .updateTable("payouts")
      .set((eb) => ({
        state: "sending",
        claim_token: a.claimToken,
        lease_until: a.leaseUntil,
        attempts: eb("attempts", "+", 1),
        processor: a.processor,
        state_changed_at: a.now,
      }))
      // SQLite would find the rows through a state index, reading every queued payout of a backlog
      // to pick out the claimed ones; `+state` keeps it on the primary key (one lookup per id).
      .where(dialect === "sqlite" ? sql<boolean>`+state = 'queued'` : sql<boolean>`state = 'queued'`)
      .where("request_id", "in", (eb) =>
        eb
          .selectFrom("payouts")
          .select("request_id")
          .where("state", "=", "queued")
          .$if(ofRail, (qb) => qb.where("rail", "=", a.rail))
          .orderBy("created_at")
          .orderBy("request_id")
          .limit(placeholder<number>(a.limit))
          .$if(dialect === "postgres", (qb) => qb.forUpdate().skipLocked()),
      )
      .returningAll()
  );
}
const CLAIM_ARGS = ["now", "leaseUntil", "limit", "processor", "claimToken"] as const;
const claimAnyLocking = preparedStatement(CLAIM_ARGS, (db, a) =>
  claimStatement(db, "postgres", { ...a, rail: "" }, false),
);
const claimAnySerialized = preparedStatement(CLAIM_ARGS, (db, a) =>
  claimStatement(db, "sqlite", { ...a, rail: "" }, false),
);
const claimRailLocking = preparedStatement([...CLAIM_ARGS, "rail"] as const, (db, a) =>
  claimStatement(db, "postgres", a, true),
);
const claimRailSerialized = preparedStatement([...CLAIM_ARGS, "rail"] as const, (db, a) =>
  claimStatement(db, "sqlite", a, true),
);

/** Up to `limit` queued payouts of a rail (any rail when absent), in the order a claim takes them. */
export async function queuedPayouts(tx: Tx, limit: number, rail?: PayoutRail): Promise<Payout[]> {
  const rows = await tx.db
    .selectFrom("payouts")
    .selectAll()
    .where("state", "=", "queued")
    .$if(rail !== undefined, (qb) => qb.where("rail", "=", rail as PayoutRail))
    .orderBy("created_at")
    .orderBy("request_id")
    .limit(limit)
    .execute();
  return rows.map(fromRow);
}

/**
 * Claims the named payouts that are still queued (their destinations were screened just before,
 * product §21), like claimPayouts: PostgreSQL skips rows another claimer has locked, SQLite runs
 * under the write lock and re-checks the state. A payout another process claimed meanwhile is left.
 */
export async function claimScreenedPayouts(
  tx: Tx,
  requestKeys: readonly string[],
  claim: { now: string; leaseUntil: string; processor: string },
): Promise<Payout[]> {
  if (requestKeys.length === 0) return [];
  const rows = await tx.db
    .updateTable("payouts")
    .set((eb) => ({
      state: "sending",
      claim_token: randomUUID(),
      lease_until: claim.leaseUntil,
      attempts: eb("attempts", "+", 1),
      processor: claim.processor,
      state_changed_at: claim.now,
    }))
    .where("state", "=", "queued")
    .where("request_id", "in", (eb) =>
      eb
        .selectFrom("payouts")
        .select("request_id")
        .where("request_id", "in", [...requestKeys])
        .where("state", "=", "queued")
        .$if(tx.dialect === "postgres", (qb) => qb.forUpdate().skipLocked()),
    )
    .returningAll()
    .execute();
  return rows.map(fromRow).sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0));
}

/**
 * The rail the service's rule picks for a payout (domain/payout.ts choosePayoutRail), with the two
 * facts it reads here: whether its currency is on a configured network and whether it refunds a
 * card payment. Asked only what the policy needs: in the sandbox, nothing.
 */
export async function payoutRailFor(
  tx: Tx,
  policy: PayoutRailPolicy,
  payout: { requestKey: string; operation: PayoutOperation; currency: string },
): Promise<PayoutRail> {
  if (policy.mode === "sandbox") return "sandbox";
  const cardRefund =
    policy.cardRefunds && payout.operation === "refund" && (await refundsCardPayment(tx, payout.requestKey));
  const onConfiguredNetwork =
    !cardRefund &&
    policy.chainPayouts &&
    (await tx.db
      .selectFrom("currencies")
      .innerJoin("networks", "networks.name", "currencies.network")
      .select("currencies.ticker")
      .where("currencies.ticker", "=", payout.currency)
      .executeTakeFirst()) !== undefined;
  return choosePayoutRail({ ...policy, onConfiguredNetwork, cardRefund });
}

/** The refund is the fiat refund of a card payment (the provider refunds it). */
async function refundsCardPayment(tx: Tx, requestKey: string): Promise<boolean> {
  const row = await tx.db
    .selectFrom("refunds")
    .innerJoin("card_checkouts", "card_checkouts.invoice_id", "refunds.invoice_id")
    .select("card_checkouts.payment_id")
    .where("refunds.request_id", "=", requestKey)
    .where("refunds.type", "=", "fiat")
    .where("card_checkouts.payment_id", "is not", null)
    .executeTakeFirst();
  return row !== undefined;
}

/**
 * Gives queued payouts accepted without a rail (before migration 028, or by a process of the
 * version before it) the rail the rule picks, up to `limit`: the payout worker runs it before each
 * claim, so the rail is chosen once and every worker then claims only its own.
 */
export async function assignPayoutRails(tx: Tx, policy: PayoutRailPolicy, limit: number): Promise<number> {
  const rows = await tx.db
    .selectFrom("payouts")
    .select(["request_id", "operation", "currency"])
    .where("state", "=", "queued")
    .where("rail", "is", null)
    .orderBy("created_at")
    .limit(limit)
    .execute();
  let assigned = 0;
  for (const r of rows) {
    if (!isPayoutOperation(r.operation)) continue;
    const rail = await payoutRailFor(tx, policy, {
      requestKey: r.request_id,
      operation: r.operation,
      currency: r.currency,
    });
    const result = await tx.db
      .updateTable("payouts")
      .set({ rail })
      .where("request_id", "=", r.request_id)
      .where("rail", "is", null)
      .executeTakeFirst();
    assigned += Number(result.numUpdatedRows);
  }
  return assigned;
}

/**
 * The states of the partial indexes payouts_sending_lease and payouts_sent_check (migration
 * 006_write_path_indexes), as literals: neither planner uses a partial index for a state given as
 * a parameter.
 */
const IS_SENDING = sql<boolean>`state = 'sending'`;
const IS_SENT = sql<boolean>`state = 'sent'`;

/**
 * A claim whose lease ran out without a report: the worker died or hung mid hand-over, so nobody
 * knows whether the money left. Such payouts are set aside for reconciliation, never resent.
 */
export async function expireLeases(
  tx: Tx,
  now: string,
  limit: number,
  /** A processor that is asked about its expired claims instead (expiredClaims), or "" for none. */
  exceptProcessor = "",
): Promise<string[]> {
  const statement = tx.dialect === "postgres" ? expireLeasesLocking : expireLeasesSerialized;
  const { rows } = await statement(tx, { now, limit, exceptProcessor });
  return rows.map((r) => r.request_id);
}

function expireLeasesStatement(dialect: Dialect) {
  return preparedStatement(["now", "limit", "exceptProcessor"] as const, (db, a) =>
    db
      .updateTable("payouts")
      .set({
        state: "needs_reconciliation",
        last_error: "the claim's lease expired before the hand-over was reported",
        lease_until: null,
        state_changed_at: a.now,
      })
      .where("state", "=", "sending")
      .where("request_id", "in", (eb) =>
        eb
          .selectFrom("payouts")
          .select("request_id")
          .where(IS_SENDING)
          .where("lease_until", "<", a.now)
          .where(sql<string>`coalesce(processor, '')`, "<>", a.exceptProcessor)
          .orderBy("lease_until")
          .limit(placeholder<number>(a.limit))
          .$if(dialect === "postgres", (qb) => qb.forUpdate().skipLocked()),
      )
      .where("lease_until", "<", a.now)
      .returning("request_id"),
  );
}
const expireLeasesLocking = expireLeasesStatement("postgres");
const expireLeasesSerialized = expireLeasesStatement("sqlite");

/**
 * Claims whose lease ran out without a report, oldest first, for a processor that can be asked
 * about a payout by its id: the worker asks it instead of setting them aside (see expireLeases).
 */
export async function expiredClaims(tx: Tx, now: string, processor: string, limit: number): Promise<Payout[]> {
  const rows = await tx.db
    .selectFrom("payouts")
    .selectAll()
    .where(IS_SENDING)
    .where("lease_until", "<", now)
    .where("processor", "=", processor)
    .orderBy("lease_until")
    .limit(limit)
    .execute();
  return rows.map(fromRow);
}

/** The processor accepted the hand-over; only the batch that holds the claim may say so. */
// Every payout runs these once or more: compiled once (see prepared.ts).
const recordSentStatement = preparedStatement(
  ["requestKey", "claimToken", "processorStatus", "processorTxId", "nextCheckAt", "now"] as const,
  (db, a) =>
    db
      .updateTable("payouts")
      .set({
        state: "sent",
        processor_status: a.processorStatus,
        processor_tx_id: a.processorTxId,
        next_check_at: a.nextCheckAt,
        lease_until: null,
        updated_at: a.now,
        state_changed_at: a.now,
      })
      .where("request_id", "=", a.requestKey)
      .where("state", "=", "sending")
      .where("claim_token", "=", a.claimToken),
);

export async function recordSent(
  tx: Tx,
  requestKey: string,
  claimToken: string,
  report: { processorStatus: string; processorTxId: string | null; nextCheckAt: string | null },
  now: string,
): Promise<boolean> {
  const result = await recordSentStatement(tx, { requestKey, claimToken, ...report, now });
  return result.affected === 1n;
}

/** The hand-over ended without a clear answer (an error, a timeout): resending could pay twice. */
export async function markNeedsReconciliation(
  tx: Tx,
  requestKey: string,
  claimToken: string,
  reason: string,
  now: string,
): Promise<boolean> {
  const result = await tx.db
    .updateTable("payouts")
    .set({ state: "needs_reconciliation", last_error: reason.slice(0, 1000), lease_until: null, state_changed_at: now })
    .where("request_id", "=", requestKey)
    .where("state", "=", "sending")
    .where("claim_token", "=", claimToken)
    .executeTakeFirst();
  return result.numUpdatedRows === 1n;
}

/**
 * Renews the lease of every payout a batch claimed and still holds (`sending` under its claim
 * token): called before a hand-over that the current lease would not cover, so that the hand-over
 * (bounded by half a lease) and the recording of the batch's accepted hand-overs end before any of
 * their leases does. Answers the
 * request keys still held; a payout not among them was set aside by another process and must
 * not be sent.
 */
export async function renewBatchLease(tx: Tx, claimToken: string, leaseUntil: string): Promise<Set<string>> {
  const rows = await tx.db
    .updateTable("payouts")
    .set({ lease_until: leaseUntil })
    .where(IS_SENDING)
    .where("claim_token", "=", claimToken)
    .returning("request_id")
    .execute();
  return new Set(rows.map((r) => r.request_id));
}

/** Sent payouts (of one rail, when given) whose processor should be asked again about their outcome. */
export async function duePayoutChecks(tx: Tx, now: string, limit: number, rail?: PayoutRail): Promise<Payout[]> {
  const rows = await tx.db
    .selectFrom("payouts")
    .selectAll()
    .where(IS_SENT)
    .where("next_check_at", "is not", null)
    .where("next_check_at", "<=", now)
    .$if(rail !== undefined, (qb) => qb.where("rail", "=", rail as PayoutRail))
    .orderBy("next_check_at")
    .limit(limit)
    .execute();
  return rows.map(fromRow);
}

/** Still pending at the processor: remember what it said and when to ask next (null: wait for a report). */
export async function reschedulePayoutCheck(
  tx: Tx,
  requestKey: string,
  report: { processorStatus: string; nextCheckAt: string | null },
  now: string,
): Promise<void> {
  const current = await findPayout(tx, requestKey);
  if (current?.state !== "sent") return;
  await tx.db
    .updateTable("payouts")
    .set({
      next_check_at: report.nextCheckAt,
      processor_status: report.processorStatus,
      ...(report.processorStatus !== current.processorStatus ? { updated_at: now } : {}),
    })
    .where("request_id", "=", requestKey)
    .where("state", "=", "sent")
    .execute();
}

export interface SettlementReport {
  outcome: PayoutOutcome;
  processorStatus: string;
  /** Null keeps what the processor said earlier. */
  processorTxId: string | null;
}

export type SettleError = "payout_not_found" | "payout_already_settled" | "claim_lost" | "payout_awaiting_approval";

/**
 * Settles a payout exactly once: the row is locked (PostgreSQL FOR UPDATE; SQLite serializes
 * writers), the transition checked against the table, and a failure credits the debit back
 * through a reversal movement in the same transaction, as does what the operation behind it does
 * on settlement (a refund moves its invoice, whose callback links use `publicBaseUrl`). `expect`
 * lets a worker settle only what its own claim or check still holds.
 */
export async function settlePayout(
  tx: Tx,
  requestKey: string,
  report: SettlementReport,
  now: string,
  publicBaseUrl: string,
  expect?: { state: PayoutState; claimToken?: string },
): Promise<Result<Payout, SettleError>> {
  const [row] = await (tx.dialect === "postgres" ? lockPayoutQuery : findPayoutQuery)(tx, { requestKey });
  if (!row) return err("payout_not_found");
  const payout = fromRow(row);
  // The compare-and-set: a settler whose read is stale (another process moved the payout meanwhile)
  // settles nothing. Guard payout-settlement-cas (src/domain/guards.ts).
  const moved =
    expect && (payout.state !== expect.state || (expect.claimToken ?? payout.claimToken) !== payout.claimToken);
  if (moved && guardOn("payout-settlement-cas")) return err("claim_lost");
  if (isSettled(payout.state)) return err("payout_already_settled");
  // Only its approvers decide a payout awaiting approval (rejectPayout expects that state).
  if (payout.state === "awaiting_approval" && expect?.state !== "awaiting_approval")
    return err("payout_awaiting_approval");
  assert(canTransition(payout.state, report.outcome), `payout ${payout.state} -> ${report.outcome} is in the table`);

  // The settled row as the update left it: nothing after this changes the payout, so no re-read.
  const { rows } = await settleStatement(tx, {
    requestKey,
    fromState: payout.state,
    outcome: report.outcome,
    processorStatus: report.processorStatus,
    processorTxId: report.processorTxId ?? payout.processorTxId,
    now,
  });
  const [settled] = rows;
  assert(settled !== undefined && rows.length === 1, `payout ${requestKey} left ${payout.state} once`);
  // The operation first: a refund locks its invoice, and invoices are locked before balance rows.
  await afterSettlement(tx, payout, report.outcome, now, publicBaseUrl);
  if (report.outcome === "failed") await reverseDebit(tx, payout, now);
  await recordSettlementEvent(tx, payout, report.outcome, now);
  return ok(fromRow(settled));
}

/**
 * What the operation a payout carries out now is: a withdrawal's or an invoice refund's request
 * object, as its signed operation answers it; for a held deposit's refund, its deposit (product
 * §30: a refund request object always names an invoice).
 */
export type PayoutSubject =
  | { request: PublicWithdrawalRequestObject | PublicRefundRequestObject }
  | { deposit: DepositObject };

export async function payoutSubject(tx: Tx, payout: Payout): Promise<PayoutSubject> {
  switch (payout.operation) {
    case "withdrawal": {
      const view = await findWithdrawalView(tx, payout.requestKey);
      assert(view !== null, `payout ${payout.requestKey} has its withdrawal`);
      return { request: publicWithdrawalRequest(view) };
    }
    case "refund": {
      const view = await findRefundView(tx, payout.requestKey);
      assert(view !== null, `payout ${payout.requestKey} has its refund`);
      if (isInvoiceRefund(view)) return { request: publicRefundRequest(view) };
      assert(view.depositId != null, `refund ${payout.requestKey} names an invoice or a deposit`);
      return { deposit: (await currentDepositObject(tx, view.depositId)).deposit };
    }
  }
}

/**
 * Every payout outcome is an event (product §15), written in the settlement's transaction with the
 * request as it now stands, and queued to the merchant's default callback URL if one is set (a held
 * deposit's refund: a deposit event, recordRefundStepEvent).
 */
async function recordSettlementEvent(tx: Tx, payout: Payout, outcome: PayoutOutcome, now: string): Promise<void> {
  if (payout.operation === "refund") {
    await recordRefundStepEvent(tx, { merchantId: payout.merchantId, refundId: payout.requestKey, step: outcome }, now);
    return;
  }
  await recordWithdrawalEvent(tx, payout, payoutEventType(payout.operation, outcome), now);
}

const lockPayoutQuery = preparedQuery(["requestKey"] as const, (db, a) =>
  db.selectFrom("payouts").selectAll().where("request_id", "=", a.requestKey).forUpdate(),
);

const settleStatement = preparedStatement(
  ["requestKey", "fromState", "outcome", "processorStatus", "processorTxId", "now"] as const,
  (db, a) =>
    db
      .updateTable("payouts")
      .set({
        state: placeholder<PayoutState>(a.outcome),
        processor_status: a.processorStatus,
        processor_tx_id: a.processorTxId,
        lease_until: null,
        next_check_at: null,
        updated_at: a.now,
        state_changed_at: a.now,
        settled_at: a.now,
      })
      .where("request_id", "=", a.requestKey)
      .where("state", "=", placeholder<PayoutState>(a.fromState))
      .returningAll(),
);

/** Credits a failed payout's debit back: the exact negation of the debit movement's entries. */
function reverseDebit(tx: Tx, payout: Payout, now: string): Promise<void> {
  return reverseDebitMovement(tx, payout.ledgerCause, payout.requestKey, "payout failed: debit credited back", now);
}

type Entry = { account: string; currency: string; amount: string | bigint };

function negated(entries: readonly Entry[]): Posting[] {
  return entries.map((e) => ({ account: e.account, currency: e.currency, amount: -BigInt(e.amount) }));
}

/**
 * A debit with its approval hold (and release): what they moved together, per account and
 * currency, so the reversal credits the merchant back from wherever the money is now.
 */
function netted(entries: readonly Entry[]): Entry[] {
  const sums = new Map<string, Entry & { amount: bigint }>();
  for (const e of entries) {
    const key = `${e.account}\u0000${e.currency}`;
    const sum = sums.get(key) ?? { account: e.account, currency: e.currency, amount: 0n };
    sum.amount += BigInt(e.amount);
    sums.set(key, sum);
  }
  return [...sums.values()].filter((e) => e.amount !== 0n);
}

async function reverseDebitMovement(
  tx: Tx,
  cause: LedgerCause,
  requestKey: string,
  memo: string,
  now: string,
): Promise<void> {
  const entries = await tx.db
    .selectFrom("ledger_movements")
    .innerJoin("ledger_entries", "ledger_entries.movement_id", "ledger_movements.id")
    .select(["ledger_movements.kind", "ledger_entries.account", "ledger_entries.currency", "ledger_entries.amount"])
    .where("ledger_movements.cause", "=", cause)
    .where("ledger_movements.cause_id", "=", requestKey)
    .where("ledger_movements.kind", "in", [DEBIT_KIND, HOLD_KIND, RELEASE_KIND])
    .orderBy("ledger_entries.id")
    .execute();
  const debit = entries.filter((e) => e.kind === DEBIT_KIND);
  assert(debit.length >= 2, `payout ${requestKey} has its debit movement`);
  const reversal: Movement = movement({
    cause: cause,
    causeId: requestKey,
    kind: REVERSAL_KIND,
    memo,
    postings: entries.length === debit.length ? negated(debit) : negated(netted(entries)),
  });
  const posted = await postMovement(tx, reversal, now);
  assert(posted.ok, `payout ${requestKey} is reversed once, and a credit is always covered`);
}

/**
 * What the operation behind a payout does when the payout settles. A withdrawal's status is read
 * from its payout, so it has nothing more to do; a refund takes the outcome and moves its invoice
 * out of refund_processing.
 */
async function afterSettlement(
  tx: Tx,
  payout: Payout,
  outcome: PayoutOutcome,
  now: string,
  publicBaseUrl: string,
): Promise<void> {
  switch (payout.operation) {
    case "withdrawal":
      return;
    case "refund":
      return settleRefund(tx, payout.requestKey, outcome, now, publicBaseUrl);
  }
}
