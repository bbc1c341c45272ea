// PostgreSQL only: a withdrawal accepted in one round trip (a function), and notifications that keep the processes' read caches exact.
import { type Kysely, sql } from "kysely";
import type { Dialect } from "../dialect.ts";

/**
 * `accept_withdrawal` writes what the service's own path writes for an accepted withdrawal (the
 * completed signed request with its answer, the withdrawal, its queued payout, the ledger movement,
 * its entries and the balance), as one statement: one round trip and one commit instead of about
 * fifteen. It decides nothing the domain decides. The caller has already applied the withdrawal
 * rules (domain/withdrawal.ts) to the facts it read, built the answer and the ledger postings
 * (domain/ledger.ts), and passes the facts it decided on; the function only:
 *
 * - takes the request id's advisory lock without waiting (`busy` if another transaction holds it),
 *   exactly the lock claimSignedRequest takes, so both paths exclude each other;
 * - answers `recorded` with the recorded row when the id was used before (the caller judges the
 *   retry with domain/idempotency.ts);
 * - answers `stale` when a fact the caller decided on is no longer what the database holds (the
 *   method, its owner, currency and address, not disabled and past its cooling-off; the merchant
 *   active; the currency's decimals and limits): the caller then takes the service's ordinary
 *   path, which reads everything afresh;
 * - locks the merchant's balance row and answers `insufficient_balance` when adding the caller's
 *   delta would take it below zero: the ledger's rule (nextBalance), which a test checks against
 *   the domain's function over generated values; nothing is written then.
 *
 * Anything else that fails (a constraint) raises, and the statement rolls back as a whole.
 */
const ACCEPT_WITHDRAWAL = sql`
create function accept_withdrawal(
  p_request_key text, p_request_id_sent text, p_merchant_id text, p_route text, p_body_hash text,
  p_method_id integer, p_destination text, p_currency text, p_decimals integer,
  p_withdrawal_min text, p_withdrawal_max text, p_amount text,
  p_movement_id text, p_memo text, p_accounts text[], p_currencies text[], p_amounts text[],
  p_merchant_account text, p_merchant_delta text, p_response text, p_now text
) returns table (outcome text, state text, merchant_id text, route text, body_hash text,
  response_status integer, response_body text, needs_reconciliation boolean)
language plpgsql as $fn$
declare
  recorded signed_requests%rowtype;
  current_balance numeric;
begin
  if not pg_try_advisory_xact_lock(hashtextextended('signed_request:' || p_request_key, 0)) then
    return query select 'busy'::text, null::text, null::text, null::text, null::text, null::integer, null::text, false;
    return;
  end if;
  select * into recorded from signed_requests s where s.request_id = p_request_key;
  if found then
    return query select 'recorded'::text, recorded.state, recorded.merchant_id, recorded.route, recorded.body_hash,
      recorded.response_status, recorded.response_body,
      exists (select 1 from payouts p where p.request_id = p_request_key and p.state = 'needs_reconciliation');
    return;
  end if;
  if not exists (
    select 1 from withdrawal_methods m
      join merchants mm on mm.id = m.merchant_id
      join currencies c on c.ticker = m.currency
    where m.id = p_method_id and m.merchant_id = p_merchant_id and m.currency = p_currency
      and m.address = p_destination and m.disabled_at is null
      and (m.usable_from is null or m.usable_from <= p_now)
      and mm.status = 'active' and c.decimals = p_decimals
      and c.withdrawal_min = p_withdrawal_min and c.withdrawal_max = p_withdrawal_max
  ) then
    return query select 'stale'::text, null::text, null::text, null::text, null::text, null::integer, null::text, false;
    return;
  end if;
  select b.balance::numeric into current_balance from ledger_balances b
    where b.account = p_merchant_account and b.currency = p_currency for update;
  if not found or current_balance + p_merchant_delta::numeric < 0 then
    return query select 'insufficient_balance'::text, null::text, null::text, null::text, null::text, null::integer,
      null::text, false;
    return;
  end if;
  insert into signed_requests (request_id, request_id_sent, merchant_id, route, body_hash, state, response_status,
    response_body, created_at, updated_at)
    values (p_request_key, p_request_id_sent, p_merchant_id, p_route, p_body_hash, 'completed', 200, p_response,
      p_now, p_now);
  insert into withdrawals (request_id, merchant_id, withdrawal_method_id, currency, amount, created_at)
    values (p_request_key, p_merchant_id, p_method_id, p_currency, p_amount, p_now);
  insert into payouts (request_id, operation, merchant_id, currency, amount, destination, ledger_cause, state,
    attempts, created_at, updated_at, state_changed_at)
    values (p_request_key, 'withdrawal', p_merchant_id, p_currency, p_amount, p_destination, 'withdrawal', 'queued',
      0, p_now, p_now, p_now);
  insert into ledger_movements (id, cause, cause_id, kind, memo, created_at)
    values (p_movement_id, 'withdrawal', p_request_key, 'debit', p_memo, p_now);
  insert into ledger_entries (movement_id, account, currency, amount)
    select p_movement_id, e.account, e.currency, e.amount from unnest(p_accounts, p_currencies, p_amounts)
      as e(account, currency, amount);
  update ledger_balances set balance = (current_balance + p_merchant_delta::numeric)::text, updated_at = p_now
    where account = p_merchant_account and currency = p_currency;
  return query select 'accepted'::text, 'completed'::text, p_merchant_id, p_route, p_body_hash, 200, p_response, false;
end
$fn$`;

/**
 * `accept_withdrawals` runs accept_withdrawal for each withdrawal of a batch, in the order given,
 * in one statement and so one transaction: one round trip and one commit (one WAL flush) for the
 * batch. Withdrawals of one merchant queue on its balance row until the commit of the transaction
 * that debited it, so one commit per withdrawal caps a merchant at one withdrawal per flush; a batch
 * shares the flush. Each element answers as accept_withdrawal does, in `item` (from 1).
 */
const ACCEPT_WITHDRAWALS = sql`
create function accept_withdrawals(p_batch jsonb)
returns table (item bigint, outcome text, state text, merchant_id text, route text, body_hash text,
  response_status integer, response_body text, needs_reconciliation boolean)
language plpgsql as $fn$
declare
  w jsonb;
  n bigint;
begin
  for w, n in select e.value, e.ordinality from jsonb_array_elements(p_batch) with ordinality as e loop
    return query select n, a.* from accept_withdrawal(
      w->>'requestKey', w->>'requestIdSent', w->>'merchantId', w->>'route', w->>'bodyHash',
      (w->>'methodId')::integer, w->>'destination', w->>'currency', (w->>'decimals')::integer,
      w->>'withdrawalMin', w->>'withdrawalMax', w->>'amount', w->>'movementId', w->>'memo',
      array(select jsonb_array_elements_text(w->'accounts')),
      array(select jsonb_array_elements_text(w->'currencies')),
      array(select jsonb_array_elements_text(w->'amounts')),
      w->>'merchantAccount', w->>'merchantDelta', w->>'response', w->>'now') as a;
  end loop;
end
$fn$`;

/**
 * Rows the processes cache (store/sharedCache.ts) announce their changes on the `read_cache`
 * channel, as `<table>:<key>`, delivered when the change commits. Inserts of cached tables need no
 * notice (an absent row is never cached), except a payment, which changes its invoice.
 */
const NOTIFIED: readonly { table: string; cached: string; column: string; events: string }[] = [
  { table: "api_keys", cached: "api_keys", column: "key_hash", events: "update or delete" },
  { table: "merchants", cached: "merchants", column: "id", events: "update or delete" },
  { table: "currencies", cached: "currencies", column: "ticker", events: "update or delete" },
  { table: "withdrawal_methods", cached: "withdrawal_methods", column: "id", events: "update or delete" },
  { table: "invoices", cached: "invoices", column: "id", events: "update or delete" },
  { table: "invoice_payments", cached: "invoices", column: "invoice_id", events: "insert or update or delete" },
];

export function postgresFastPaths(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (dialect !== "postgres") return;
      await ACCEPT_WITHDRAWAL.execute(db);
      await ACCEPT_WITHDRAWALS.execute(db);
      for (const { table, cached, column, events } of NOTIFIED) {
        const fn = sql.id(`read_cache_notify_${table}`);
        // OLD for updates and deletes (the key a process cached); NEW for a payment's insert.
        await sql`create function ${fn}() returns trigger language plpgsql as $fn$
          begin
            perform pg_notify('read_cache', ${sql.lit(`${cached}:`)} ||
              case when tg_op = 'INSERT' then new.${sql.id(column)}::text else old.${sql.id(column)}::text end);
            return null;
          end
          $fn$`.execute(db);
        await sql`create trigger ${sql.id(`read_cache_${table}`)} after ${sql.raw(events)} on ${sql.id(table)}
          for each row execute function ${fn}()`.execute(db);
      }
    },
  };
}
