// PostgreSQL's one-statement withdrawal (migrations 016, 028) leaves a withdrawal under a payout policy (product §31) to the ordinary path, so the service need not look the policy up first: one round trip again.
import type { Kysely } from "kysely";
import { sql } from "kysely";
import type { Dialect } from "../dialect.ts";

/** accept_withdrawal as in migration 028, answering `stale` when the merchant has a payout policy in the currency. */
const ACCEPT_WITHDRAWAL = sql`
create or replace function accept_withdrawal(
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
  -- A merchant's payout policy (product §31) is checked under its row lock on the ordinary path:
  -- with one in this currency the withdrawal is not this statement's to accept.
  if exists (select 1 from payout_policies pp where pp.merchant_id = p_merchant_id and pp.currency = p_currency) then
    return query select 'stale'::text, null::text, null::text, null::text, null::text, null::integer, null::text, false;
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

export function acceptWithdrawalPolicyGuard(dialect: Dialect) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (dialect !== "postgres") return;
      await ACCEPT_WITHDRAWAL.execute(db);
    },
  };
}
