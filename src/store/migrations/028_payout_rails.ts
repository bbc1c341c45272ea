// Payout rails (issue 31): each payout records the rail it leaves by, chosen when it is accepted; rows in flight get theirs from what decided it before.
import { type Kysely, sql } from "kysely";
import type { Dialect } from "../dialect.ts";

/**
 * accept_withdrawal of migration 016, with one more argument: the payout's rail, which it writes on
 * the queued payout. Everything else is as 016 says.
 */
const ACCEPT_WITHDRAWAL = sql`
create function accept_withdrawal(
  p_request_key text, p_request_id_sent text, p_merchant_id text, p_route text, p_body_hash text,
  p_method_id integer, p_destination text, p_currency text, p_decimals integer,
  p_withdrawal_min text, p_withdrawal_max text, p_amount text,
  p_movement_id text, p_memo text, p_accounts text[], p_currencies text[], p_amounts text[],
  p_merchant_account text, p_merchant_delta text, p_response text, p_now text, p_rail text
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
    rail, attempts, created_at, updated_at, state_changed_at)
    values (p_request_key, 'withdrawal', p_merchant_id, p_currency, p_amount, p_destination, 'withdrawal', 'queued',
      p_rail, 0, p_now, p_now, p_now);
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

/** accept_withdrawals as in 016, passing each withdrawal's rail. */
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
      w->>'merchantAccount', w->>'merchantDelta', w->>'response', w->>'now', w->>'rail') as a;
  end loop;
end
$fn$`;

/**
 * Rows in flight keep the rail that already carries them: a payout with chain transactions (or
 * taken by the chain processor) is on the EVM rail, one claimed by the sandbox or the operator's
 * processor on theirs, and one claimed by the card processor (which refunded card payments and
 * passed everything else to the operator's) on the card rail when it refunds a card payment.
 * Queued payouts wait for the configuration, which the database does not hold: the payout worker
 * gives each the rail the service's rule picks (assignPayoutRails) before it claims any.
 */
const FILL_OPEN_RAILS = sql`
update payouts set rail = case
    when processor = 'chain' or exists (select 1 from payout_transactions t where t.payout_request_id = payouts.request_id)
      then 'evm'
    when processor = 'sandbox' then 'sandbox'
    when processor like '%+%' and exists (
      select 1 from refunds r join card_checkouts c on c.invoice_id = r.invoice_id
      where r.request_id = payouts.request_id and r.type = 'fiat' and c.payment_id is not null)
      then 'card'
    else 'operator'
  end
where state in ('sending', 'sent', 'needs_reconciliation')`;

export function payoutRails(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema.alterTable("payouts").addColumn("rail", "text").execute();
      await FILL_OPEN_RAILS.execute(db);
      // Each worker claims its rail's queued payouts, oldest first; the payout worker looks for
      // queued payouts without a rail before each claim (few, and only after an upgrade).
      await db.schema
        .createIndex("payouts_rail_queue")
        .on("payouts")
        .columns(["rail", "state", "created_at"])
        .execute();
      await db.schema
        .createIndex("payouts_rail_unset")
        .on("payouts")
        .column("created_at")
        .where(sql<boolean>`rail is null and state = 'queued'`)
        .execute();
      if (dialect !== "postgres") return;
      await sql`drop function accept_withdrawals(jsonb)`.execute(db);
      await sql`drop function accept_withdrawal(text, text, text, text, text, integer, text, text, integer, text, text, text, text, text, text[], text[], text[], text, text, text, text)`.execute(
        db,
      );
      await ACCEPT_WITHDRAWAL.execute(db);
      await ACCEPT_WITHDRAWALS.execute(db);
    },
  };
}
