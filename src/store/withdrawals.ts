// Withdrawal repository: the accepted withdrawal's facts, read together with its payout for the public object.

import { type Kysely, sql } from "kysely";
import type { Currency } from "../domain/currencies.ts";
import type { RecordedRequest } from "../domain/idempotency.ts";
import { newRowId } from "../domain/ids.ts";
import type { Movement } from "../domain/ledger.ts";
import type { PayoutRail, PayoutState, PublicPayoutStatus } from "../domain/payout.ts";
import { isPayoutState, statesShownAs } from "../domain/payout.ts";
import { assert, invariantViolation, ok, type Result } from "../domain/result.ts";
import { type ListError, merchantPage, type Page, type PageWindow } from "./keyset.ts";
import { merchantDeltas } from "./ledger.ts";
import { placeholder, preparedQuery, preparedStatement } from "./prepared.ts";
import type { Database } from "./schema.ts";
import type { SignedRequestFields } from "./signedRequests.ts";
import type { Tx } from "./store.ts";

export interface WithdrawalRecord {
  requestKey: string;
  merchantId: string;
  withdrawalMethodId: number;
  currency: string;
  amountMinor: bigint;
  createdAt: string;
}

// CreateWithdrawal runs both on every request: compiled once (see prepared.ts).
const insertStatement = preparedStatement(
  ["requestKey", "merchantId", "methodId", "currency", "amount", "createdAt"] as const,
  (db, a) =>
    db.insertInto("withdrawals").values({
      request_id: a.requestKey,
      merchant_id: a.merchantId,
      withdrawal_method_id: placeholder<number>(a.methodId),
      currency: a.currency,
      amount: a.amount,
      created_at: a.createdAt,
    }),
);

export async function insertWithdrawal(tx: Tx, withdrawal: WithdrawalRecord): Promise<void> {
  await insertStatement(tx, {
    requestKey: withdrawal.requestKey,
    merchantId: withdrawal.merchantId,
    methodId: withdrawal.withdrawalMethodId,
    currency: withdrawal.currency,
    amount: withdrawal.amountMinor.toString(),
    createdAt: withdrawal.createdAt,
  });
}

/** A withdrawal with what its public object needs: the id as first accepted, decimals, and the payout's progress. */
export interface WithdrawalView extends WithdrawalRecord {
  /** The ticker the interface answers (`USDT` for the entry `USDT_BASE`, product §23). */
  ticker: string;
  requestIdSent: string;
  decimals: number;
  payoutState: PayoutState;
  processorStatus: string | null;
  processorTxId: string | null;
  updatedAt: string;
}

/** The columns of a withdrawal's public object: the withdrawal, its request id as sent, decimals, its payout's progress. */
function viewSelect(db: Kysely<Database>) {
  return db
    .selectFrom("withdrawals")
    .innerJoin("signed_requests", "signed_requests.request_id", "withdrawals.request_id")
    .innerJoin("payouts", "payouts.request_id", "withdrawals.request_id")
    .innerJoin("currencies", "currencies.ticker", "withdrawals.currency")
    .select([
      "withdrawals.request_id",
      "withdrawals.merchant_id",
      "withdrawals.withdrawal_method_id",
      "withdrawals.currency",
      "withdrawals.amount",
      "withdrawals.created_at",
      "signed_requests.request_id_sent",
      "currencies.decimals",
      "currencies.symbol",
      "payouts.state",
      "payouts.processor_status",
      "payouts.processor_tx_id",
      "payouts.updated_at",
    ]);
}

type ViewRow = Awaited<ReturnType<ReturnType<typeof viewSelect>["execute"]>>[number];

function viewFromRow(r: ViewRow): WithdrawalView {
  assert(isPayoutState(r.state), `payout ${r.request_id} has a known state`);
  return {
    requestKey: r.request_id,
    merchantId: r.merchant_id,
    withdrawalMethodId: Number(r.withdrawal_method_id),
    currency: r.currency,
    ticker: r.symbol ?? r.currency,
    amountMinor: BigInt(r.amount),
    createdAt: r.created_at,
    requestIdSent: r.request_id_sent,
    decimals: Number(r.decimals),
    payoutState: r.state,
    processorStatus: r.processor_status,
    processorTxId: r.processor_tx_id,
    updatedAt: r.updated_at,
  };
}

const viewQuery = preparedQuery(["requestKey"] as const, (db, a) =>
  viewSelect(db).where("withdrawals.request_id", "=", a.requestKey),
);

export async function findWithdrawalView(tx: Tx, requestKey: string): Promise<WithdrawalView | null> {
  const [r] = await viewQuery(tx, { requestKey });
  return r ? viewFromRow(r) : null;
}

/**
 * The merchant's withdrawal by the id its public object shows (the request id, matched whatever
 * its case, as the signed operation matches it); another merchant's is null.
 */
export async function findWithdrawalViewForMerchant(
  tx: Tx,
  merchantId: string,
  id: string,
): Promise<WithdrawalView | null> {
  const view = await findWithdrawalView(tx, id.toLowerCase());
  return view?.merchantId === merchantId ? view : null;
}

export interface WithdrawalListFilter extends PageWindow {
  /** The public status: processing covers every payout state before settlement. */
  status?: PublicPayoutStatus | undefined;
}

/** A page of the merchant's withdrawals, newest first, each as its public object needs it. */
export async function listWithdrawals(
  tx: Tx,
  merchantId: string,
  filter: WithdrawalListFilter,
): Promise<Result<Page<WithdrawalView>, ListError>> {
  const page = await merchantPage(
    tx,
    {
      table: "withdrawals",
      idColumn: "request_id",
      columns: { createdAt: "withdrawals.created_at", id: "withdrawals.request_id" },
      noun: "a withdrawal",
    },
    merchantId,
    // Request ids are matched whatever their case, as the signed operation matches them.
    { ...filter, startingAfter: filter.startingAfter?.toLowerCase() },
    viewSelect(tx.db)
      .where("withdrawals.merchant_id", "=", merchantId)
      .$if(filter.status !== undefined, (qb) =>
        qb.where("payouts.state", "in", statesShownAs(filter.status as PublicPayoutStatus)),
      ),
  );
  if (!page.ok) return page;
  return ok({ data: page.value.data.map(viewFromRow), hasMore: page.value.hasMore });
}

/** What accept_withdrawal (migration 016) answers. */
export type OneStatementOutcome =
  | { readonly kind: "accepted" }
  /** Another transaction holds the request id: the ordinary path waits for it. */
  | { readonly kind: "busy" }
  /** A fact the caller decided on changed: the ordinary path reads everything afresh. */
  | { readonly kind: "stale" }
  /** The batch statement failed or the queue is full; nothing was written: the ordinary path. */
  | { readonly kind: "failed" }
  | { readonly kind: "insufficient_balance" }
  | { readonly kind: "recorded"; readonly recorded: RecordedRequest; readonly needsReconciliation: boolean };

/** An accepted withdrawal as the domain decided it, with the facts it decided on and its answer. */
export interface OneStatementWithdrawal {
  signed: SignedRequestFields;
  withdrawal: WithdrawalRecord;
  destination: string;
  currency: Currency;
  movement: Movement;
  response: string;
  /** The payout's rail (store/payouts.ts payoutRailFor), written on the queued payout; absent: the payout worker assigns it. */
  rail?: PayoutRail | undefined;
}

interface AcceptRow {
  item: string | number;
  outcome: string;
  state: string | null;
  merchant_id: string | null;
  route: string | null;
  body_hash: string | null;
  response_status: number | null;
  response_body: string | null;
  needs_reconciliation: boolean;
}

const acceptBatchQuery = preparedQuery(["batch"] as const, (db, a) => ({
  compile: () => sql<AcceptRow>`select * from accept_withdrawals(${a.batch}::jsonb)`.compile(db),
}));

/** The most withdrawals one statement carries, and the most a process keeps waiting for the next one. */
export const WITHDRAWAL_BATCH_SIZE = 64;
export const WITHDRAWAL_QUEUE_LIMIT = 4096;

interface Waiting {
  merchantAccount: string;
  /** accept_withdrawal's arguments, by name. */
  item: Record<string, unknown>;
  resolve: (outcome: OneStatementOutcome) => void;
}

/**
 * One statement in flight per process: the withdrawals that arrive meanwhile go together in the
 * next (group commit), so a merchant's withdrawals share a commit instead of queuing one commit
 * each on its balance row. A batch is ordered by merchant account (the order postMovement locks
 * balances in), so two batches never wait on each other's rows in a cycle. A batch that fails
 * answers `failed` for each of its withdrawals, and none of them was written.
 */
class WithdrawalBatcher {
  #queue: Waiting[] = [];
  #inFlight = false;
  readonly #tx: Tx;

  constructor(tx: Tx) {
    this.#tx = tx;
  }

  submit(merchantAccount: string, item: Record<string, unknown>): Promise<OneStatementOutcome> {
    if (this.#queue.length >= WITHDRAWAL_QUEUE_LIMIT) return Promise.resolve({ kind: "failed" });
    return new Promise((resolve) => {
      this.#queue.push({ merchantAccount, item, resolve });
      if (!this.#inFlight) void this.#flush();
    });
  }

  async #flush(): Promise<void> {
    this.#inFlight = true;
    while (this.#queue.length > 0) {
      const batch = this.#queue.splice(0, WITHDRAWAL_BATCH_SIZE);
      batch.sort((a, b) =>
        a.merchantAccount < b.merchantAccount ? -1 : a.merchantAccount > b.merchantAccount ? 1 : 0,
      );
      try {
        const rows = await acceptBatchQuery(this.#tx, { batch: JSON.stringify(batch.map((w) => w.item)) });
        const byItem = new Map(rows.map((r) => [Number(r.item), r]));
        batch.forEach((w, i) => {
          w.resolve(outcomeOf(byItem.get(i + 1)));
        });
      } catch {
        // Nothing of the batch was written: each withdrawal takes the ordinary path, which reports its own error.
        for (const w of batch) w.resolve({ kind: "failed" });
      }
    }
    this.#inFlight = false;
  }
}

function outcomeOf(row: AcceptRow | undefined): OneStatementOutcome {
  switch (row?.outcome) {
    case "accepted":
    case "busy":
    case "stale":
    case "insufficient_balance":
      return { kind: row.outcome };
    case "recorded":
      return {
        kind: "recorded",
        recorded: {
          merchantId: row.merchant_id ?? "",
          route: row.route ?? "",
          bodyHash: row.body_hash ?? "",
          state: row.state === "completed" ? "completed" : "running",
          responseStatus: row.response_status === null ? null : Number(row.response_status),
          responseBody: row.response_body,
        },
        needsReconciliation: row.needs_reconciliation === true,
      };
    default:
      throw invariantViolation(`accept_withdrawal answered ${String(row?.outcome)}`);
  }
}

const batchers = new WeakMap<Tx, WithdrawalBatcher>();

/**
 * PostgreSQL only: records an accepted withdrawal with accept_withdrawal (migration 016, which says
 * what it checks and writes), in the next batch statement of this process (its own transaction).
 * The caller decided it with the domain's rules; `stale`, `busy` and `failed` send it to the
 * ordinary path.
 */
export async function acceptWithdrawalInOneStatement(tx: Tx, w: OneStatementWithdrawal): Promise<OneStatementOutcome> {
  assert(tx.dialect === "postgres", "accept_withdrawal exists on PostgreSQL");
  const [debit, ...others] = merchantDeltas(w.movement);
  assert(
    debit !== undefined && others.length === 0 && debit.delta < 0n && debit.currency === w.currency.ticker,
    "a withdrawal debits one merchant balance in its currency",
  );
  assert(
    w.movement.cause === "withdrawal" && w.movement.kind === "debit" && w.movement.causeId === w.signed.requestKey,
    "accept_withdrawal posts the withdrawal's debit",
  );
  let batcher = batchers.get(tx);
  if (!batcher) {
    batcher = new WithdrawalBatcher(tx);
    batchers.set(tx, batcher);
  }
  return batcher.submit(debit.account, {
    requestKey: w.signed.requestKey,
    requestIdSent: w.signed.requestIdSent,
    merchantId: w.signed.merchantId,
    route: w.signed.route,
    bodyHash: w.signed.bodyHash,
    methodId: w.withdrawal.withdrawalMethodId,
    destination: w.destination,
    currency: w.currency.ticker,
    decimals: w.currency.decimals,
    withdrawalMin: w.currency.withdrawalMinMinor.toString(),
    withdrawalMax: w.currency.withdrawalMaxMinor.toString(),
    amount: w.withdrawal.amountMinor.toString(),
    movementId: newRowId(),
    memo: w.movement.memo,
    accounts: w.movement.postings.map((p) => p.account),
    currencies: w.movement.postings.map((p) => p.currency),
    amounts: w.movement.postings.map((p) => p.amount.toString()),
    merchantAccount: debit.account,
    merchantDelta: debit.delta.toString(),
    response: w.response,
    rail: w.rail ?? null,
    now: w.withdrawal.createdAt,
  });
}
