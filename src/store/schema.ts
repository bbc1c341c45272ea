// Table types of the store, shared by both dialects: amounts are minor-unit integer strings, times ISO-8601 UTC strings with milliseconds, flags 0/1.
import type { Generated } from "kysely";

export interface SettingsTable {
  key: string;
  value: string;
}

export interface CurrenciesTable {
  ticker: string;
  full_name: string;
  network: string;
  contract_address: string | null;
  type: string;
  icon: string;
  icon_dark: string;
  internal_ticker: string;
  decimals: number;
  network_fee: string;
  withdrawal_min: string;
  withdrawal_max: string;
  rate_usd: string;
  sort_order: number;
  /** JSON of a chainlink rate source (migration 025); null: static, the entry's rate_usd. */
  rate_source?: string | null;
  /** The ticker this entry's currency shares with its other networks (migration 029); null: the key. */
  symbol?: string | null;
  /** JSON of the entry's authorization (migration 043, product §28); null: transfers only. */
  wallet_authorization?: string | null;
  /** Minor units below which a deposit to a customer's address is dust (migration 048, product §30); null: none. */
  min_deposit?: string | null;
}

export interface MerchantsTable {
  id: string;
  email: string;
  merchant_name: string | null;
  director_name: string | null;
  website: string | null;
  logo: string | null;
  whitelabeling: number;
  status: string;
  fee_percent: string;
  fees_paid_by: string;
  callback_secret: string;
  callback_secret_previous: string | null;
  callback_secret_rotated_at: string | null;
  created_at: string;
  updated_at: string;
  /** Where withdrawal and refund events are delivered (migration 011); null: nowhere. */
  default_callback_url?: string | null;
}

export interface ApiKeysTable {
  id: string;
  merchant_id: string;
  key_hash: string;
  key_prefix: string;
  /** AES-256-GCM envelope of the secret key; null for a legacy key. */
  secret_encrypted: string | null;
  legacy: number;
  created_at: string;
  revoked_at: string | null;
  last_used_at?: string | null;
  /** JSON array of scopes (product §31); null: a full key (every key made before scopes). */
  scopes?: string | null;
  /** JSON array of CIDR ranges the key may be used from; null: anywhere. */
  allowed_addresses?: string | null;
  /** The client address of the last use recorded with last_used_at. */
  last_used_from?: string | null;
}

export interface WithdrawalMethodsTable {
  id: Generated<number>;
  merchant_id: string;
  currency: string;
  address: string;
  label: string | null;
  created_at: string;
  /** Set when the method was disabled: it takes no new withdrawal. */
  disabled_at?: string | null;
  /** When the method starts taking withdrawals (the dashboard's cooling-off); null: at once. */
  usable_from?: string | null;
  /** `operator` or `dashboard`. */
  added_by?: string;
}

export interface LedgerMovementsTable {
  id: string;
  cause: string;
  cause_id: string;
  kind: string;
  memo: string | null;
  created_at: string;
}

export interface LedgerEntriesTable {
  id: Generated<number>;
  movement_id: string;
  account: string;
  currency: string;
  amount: string;
}

export interface LedgerBalancesTable {
  account: string;
  currency: string;
  balance: string;
  updated_at: string;
}

export interface InvoicesTable {
  id: string;
  merchant_id: string;
  idempotency_key: string | null;
  request_hash: string | null;
  type: string;
  status: string;
  currency: string;
  settlement_currency: string;
  convert_currency: string | null;
  amount: string;
  final_amount: string;
  merchant_fee: string;
  network_and_other_fees: string;
  merchant_receive_amount: string;
  callback_url: string | null;
  success_url: string | null;
  return_url: string | null;
  fail_url: string | null;
  order_no: string | null;
  description: string | null;
  api_source: string | null;
  deposit_address: string | null;
  expires_at: string | null;
  /** 1 when the expiry worker left a fully seen but unconfirmed invoice to its confirmations. */
  expiry_deferred: Generated<number>;
  /** Live crypto invoices: the HD index n of the deposit address m/44'/60'/0'/0/n. */
  deposit_index?: BigintColumn | null;
  /** The catalog entry an `internalTicker` invoice is restricted to (migration 029); null: every entry. */
  currency_entry?: string | null;
  /** The factory (lowercase) whose forwarder deposit_address is (migration 031); null: derived or sandbox. */
  deposit_factory?: string | null;
  /** `accept` or `refund` once a late, partial or stranded payment was resolved (product §12). */
  resolution?: string | null;
  resolved_at?: string | null;
  /** JSON list of the rates fixed at creation (migration 025); null before quotes were fixed. */
  quote_rates?: string | null;
  created_at: string;
  updated_at: string;
}

export interface InvoicePaymentsTable {
  id: string;
  invoice_id: string;
  tx_id: string;
  amount: string;
  from_address: string | null;
  confirmed: number;
  /** `none`, `unscreened`, `flagged`, `cleared` or `blocked`. */
  aml_status: string;
  /** Screening (migration 030): attempts that found no answer, when to try again, why it was flagged. */
  screening_attempts?: number;
  screen_after?: string | null;
  screening_reason?: string | null;
  /** The card payment provider (`sandbox_card`); null for an on-chain payment. */
  provider: string | null;
  /** Chain payments (product §12): the network, transaction hash, log index (null: native), block. */
  network?: string | null;
  tx_hash?: string | null;
  log_index?: number | null;
  block_number?: BigintColumn | null;
  block_hash?: string | null;
  /** 1 when it reached the invoice after the invoice stopped taking payments. */
  late?: number;
  /** When a resolution covered this payment (migration 022); null while it waits for one. */
  resolved_at?: string | null;
  /** At confirmation (migration 025): USD cents at the invoice's fixed rate, the live rate and the cents at it. */
  value_usd?: string | null;
  live_rate_usd?: string | null;
  live_value_usd?: string | null;
  /** A chain payment's units beyond its currency's precision (migration 029), in its entry's units: the operator's dust. */
  dust?: string | null;
  created_at: string;
  updated_at: string;
}

/** The last reading of each currency's feed (migration 025), shared by the store's processes. */
export interface RateReadingsTable {
  ticker: string;
  source: string;
  rate_usd: string;
  /** The feed round's time (ISO-8601). */
  feed_updated_at: string;
  read_at: string;
}

export interface SignedRequestsTable {
  /** The request id lowercased: ids match case-insensitively and are unique across the service. */
  request_id: string;
  /** The request id as first accepted; `request.id` echoes this form. */
  request_id_sent: string;
  merchant_id: string;
  /** The signed route, e.g. `/public/v1/withdrawals/create`. */
  route: string;
  /** SHA-256 (hex) of the RFC 8785 canonical body. */
  body_hash: string;
  /** `running` while the claiming transaction is open, `completed` when it commits with a response. */
  state: string;
  response_status: number | null;
  /** The exact response text, replayed byte for byte. */
  response_body: string | null;
  created_at: string;
  updated_at: string;
}

export interface WithdrawalsTable {
  request_id: string;
  merchant_id: string;
  withdrawal_method_id: number;
  currency: string;
  amount: string;
  created_at: string;
}

export interface RefundsTable {
  /** The request id lowercased; also the id of the refund's payout. */
  request_id: string;
  merchant_id: string;
  /** The refunded invoice, or null for a customer's held deposit (deposit_id; migration 056: exactly one is set). */
  invoice_id: string | null;
  /** `crypto` or `fiat`. */
  type: string;
  /** Currency and amount refunded (and paid out). */
  currency: string;
  amount: string;
  /** What left the merchant's balance: the settlement currency, converted when it differs. */
  debit_currency: string;
  debit_amount: string;
  /** The destination of a crypto refund; null for a fiat refund. */
  to_address: string | null;
  withdraw_to_same_address: number;
  reason: string | null;
  /** `processing`, `completed` or `failed`: settled with the payout, in its transaction. */
  status: string;
  created_at: string;
  /** 1: a partial refund (POST /public/v1/refunds/create), several per invoice (migration 024). */
  partial: Generated<number>;
  /** Minor units of the invoice currency this refund takes of paid_amount; null: all of it. */
  paid_share: string | null;
  /** `merchant` or `payer`; null for the interface's refunds, which pay out in full. */
  network_fee_paid_by: string | null;
  /** The held deposit refunded (product §30), or null for an invoice's refund. */
  deposit_id: string | null;
}

/** A refund the payer claims through /refund/{token} (product §25). */
export interface RefundClaimsTable {
  token: string;
  refund_id: string;
  merchant_id: string;
  /** `open`, `claimed` or `expired`. */
  status: string;
  expires_at: string;
  address: string | null;
  claimed_at: string | null;
  created_at: string;
  updated_at: string;
}

/** A payment link (product §25): amounts in minor units of `currency`, as text. */
export interface PaymentLinksTable {
  id: string;
  merchant_id: string;
  currency: string;
  amount: string | null;
  min_amount: string | null;
  max_amount: string | null;
  description: string | null;
  callback_url: string | null;
  success_url: string | null;
  return_url: string | null;
  fail_url: string | null;
  active: number;
  created_at: string;
  updated_at: string;
}

/** A merchant's subscription plan (product §29, migration 044); `amount` in minor units of `currency`. */
export interface PlansTable {
  id: string;
  merchant_id: string;
  name: string;
  currency: string;
  amount: string;
  interval: string;
  interval_count: number;
  trial_days: number;
  grace_days: number;
  renewal_notice_days: number;
  active: number;
  created_at: string;
  updated_at: string;
}

/** A customer's subscription to a plan (product §29): its schedule's state; `run_at` when it next has work. */
export interface SubscriptionsTable {
  id: string;
  merchant_id: string;
  plan_id: string;
  next_plan_id: string | null;
  next_plan_period: number | null;
  customer_reference: string;
  customer_email: string | null;
  callback_url: string | null;
  status: string;
  anchor_at: string;
  anchor_period: number;
  period: number;
  current_period_start: string;
  current_period_end: string;
  trial_end: string | null;
  paid_period: number;
  invoiced_period: number;
  open_invoice_id: string | null;
  cancel_at_period_end: number;
  canceled_at: string | null;
  run_at: string | null;
  test_clock: string | null;
  created_at: string;
  updated_at: string;
}

/** The invoice of one period of a subscription: one per (subscription, period). */
export interface SubscriptionInvoicesTable {
  subscription_id: string;
  period: number;
  invoice_id: string;
  plan_id: string;
  period_start: string;
  period_end: string;
  created_at: string;
}

/** The invoice a payment link made for one browser session. */
export interface PaymentLinkInvoicesTable {
  link_id: string;
  session: string;
  invoice_id: string;
  created_at: string;
}

export interface PayoutsTable {
  request_id: string;
  /** What the payout carries out: one of PAYOUT_OPERATIONS (src/domain/payout.ts). */
  operation: string;
  merchant_id: string;
  currency: string;
  amount: string;
  destination: string;
  /** Ledger cause of the debit movement this payout reverses if it fails. */
  ledger_cause: string;
  /** One of PAYOUT_STATES (src/domain/payout.ts). */
  state: string;
  /** One of PAYOUT_RAILS (src/domain/payout.ts), chosen at acceptance; null only before a worker assigns it (migration 028). */
  rail: string | null;
  processor: string | null;
  processor_status: string | null;
  processor_tx_id: string | null;
  /** Set by the claim of a worker batch; reports of that batch must present it. */
  claim_token: string | null;
  lease_until: string | null;
  attempts: number;
  next_check_at: string | null;
  last_error: string | null;
  created_at: string;
  /** Last change of what the public object shows (status, processor status, processor tx id). */
  updated_at: string;
  state_changed_at: string;
  settled_at: string | null;
}

/** A merchant's payout policy in one currency (product §31, migration 047); amounts in minor units. */
export interface PayoutPoliciesTable {
  merchant_id: string;
  currency: string;
  per_payout_limit: string | null;
  daily_limit: string | null;
  approvals_required: number;
  pending_per_payout_limit: string | null;
  pending_daily_limit: string | null;
  pending_approvals_required: number | null;
  /** When the pending (looser) limits replace the ones above; null: nothing pending. */
  pending_effective_at: string | null;
  updated_at: string;
}

/** A payout accepted as awaiting_approval (migration 047). */
export interface PayoutApprovalRequestsTable {
  request_id: string;
  merchant_id: string;
  approvals_required: number;
  /** per_payout_limit or daily_limit. */
  reason: string;
  initiator_user_id: string | null;
  /** pending, approved or rejected. */
  state: string;
  created_at: string;
  decided_at: string | null;
}

/** One approver's decision on one payout (approve or reject). */
export interface PayoutApprovalsTable {
  request_id: string;
  user_id: string;
  decision: string;
  created_at: string;
}

/** The operator's 24-hour cap of a network's hot-wallet payouts, in USD cents (migration 047). */
export interface NetworkVelocityCapsTable {
  network: string;
  usd_cents: string;
  updated_at: string;
}

/** A hot-wallet payout's USD value when it was signed (migration 051): the velocity cap's 24-hour sum. */
export interface VelocitySpendsTable {
  request_id: string;
  network: string;
  usd_cents: BigintColumn;
  spent_at: string;
}

/** Every event of a merchant (product §15), written in the transaction of the change it reports. */
export interface EventsTable {
  /** `evt_…`; also the id of its callback delivery and its `webhook-id`. */
  id: string;
  merchant_id: string;
  /** `invoice.<status>`, `withdrawal.completed|failed`, `refund.completed|failed`. */
  type: string;
  /** The invoice id, or the (lowercased) request id of a withdrawal or refund. */
  subject_id: string;
  /** The exact JSON text of the event: the GET /events item and the callback body. */
  body: string;
  created_at: string;
}

/** The delivery of an event to a callback URL (same id as the event). */
export interface CallbackEventsTable {
  /** Recording order; the events of one subject are delivered in this order. */
  seq: Generated<number>;
  id: string;
  /** The invoice of an invoice event; null for a withdrawal or refund event. */
  invoice_id: string | null;
  /** What orders delivery: the invoice id, or the request id of a withdrawal or refund. */
  subject_id: string;
  merchant_id: string;
  /** The event's type (a copy, as is the body: the delivery signs and sends exactly these). */
  type: string;
  url: string;
  /** `host[:port]` of the URL: the unit of per-destination concurrency. */
  destination: string;
  /** The exact JSON text every attempt sends and signs. */
  body: string;
  /** `pending`, `delivered` or `failed`. */
  status: string;
  attempt_count: number;
  /** Failed attempts since the event was recorded or last redelivered: the position in the retry schedule. */
  schedule_position: number;
  /** When a pending event is due; null once delivered or failed. */
  next_attempt_at: string | null;
  /** A worker's claim: until then no other worker attempts the event. */
  lease_until: string | null;
  claim_token: string | null;
  delivered_at: string | null;
  created_at: string;
  updated_at: string;
}

export interface CallbackAttemptsTable {
  id: Generated<number>;
  event_id: string;
  number: number;
  started_at: string;
  duration_ms: number;
  /** Null when no HTTP answer came (timeout, refused connection, forbidden address). */
  status_code: number | null;
  error: string | null;
  /** The start of the answer's body, truncated. */
  response_body: string | null;
}

/** A 64-bit integer column: SQLite answers a number, PostgreSQL (int8) a string; read it with Number() or BigInt(). */
export type BigintColumn = number | string;

export interface NetworksTable {
  name: string;
  chain_id: BigintColumn;
  rpc_url_sealed: string;
  confirmations: number;
  explorer_url: string | null;
  scanned_block: BigintColumn | null;
  scanned_hash: string | null;
  head_block: BigintColumn | null;
  head_seen_at: string | null;
  lease_owner: string | null;
  lease_until: string | null;
  node_error: string | null;
  node_error_at: string | null;
  hot_nonce: BigintColumn | null;
  /** Lowercase address of the hot wallet whose nonces hot_nonce counts (null: counted before migration 018). */
  hot_nonce_address?: string | null;
  /** Since when the chain's nonce stays below a nonce no stored transaction uses (migration 022; null: no gap). */
  nonce_gap_since?: string | null;
  /** How many such nonces the last check found. */
  nonce_gaps?: number;
  /** Token of the scanner lease: each write of a scan batch checks it (migration 022). */
  lease_token?: string | null;
  /** Timestamp (ISO) of the block at scanned_block: what the chain's time is for expiry (migration 022). */
  scanned_time?: string | null;
  /** The forwarder factory found deployed on this network, lowercase (migration 031); null: not deployed. */
  factory_address?: string | null;
  factory_deployed_at?: string | null;
  created_at: string;
  updated_at: string;
}

export interface ScannedBlocksTable {
  network: string;
  number: BigintColumn;
  hash: string;
}

/** SQLite only: named counters (the deposit index), bumped in a write transaction. */
export interface CountersTable {
  name: string;
  value: number;
}

export interface SweepsTable {
  id: string;
  payment_id: string;
  invoice_id: string;
  network: string;
  currency: string;
  deposit_index: BigintColumn;
  deposit_address: string;
  amount: string;
  swept_amount: string | null;
  /** `funding`: its gas funding is the hot wallet's outbox's (hot_transactions, purpose `funding`, purpose_id its id; migration 042). */
  state: string;
  sweep_tx: string | null;
  sweep_signed: string | null;
  /** Wei its transactions cost (its own and its gas funding's), posted once it completes. */
  gas_cost: string | null;
  attempts: number;
  next_attempt_at: string;
  last_error: string | null;
  created_at: string;
  updated_at: string;
}

/** One flush: a batch of forwarder deposits moved to the hot wallet (product §24, migration 032); its transactions are the outbox's (hot_transactions of purpose `flush`, purpose_id = id; migration 041). */
export interface FlushesTable {
  id: string;
  network: string;
  factory: string;
  /** `signed` (its transaction out), `completed`, `reverted` or `dropped` (flush_states). */
  state: string;
  gas_used: string | null;
  gas_cost: string | null;
  last_error: string | null;
  created_at: string;
  updated_at: string;
}

/** A confirmed payment to a forwarder deposit address, waiting for or carried by a flush (migration 032). */
export interface FlushDepositsTable {
  id: string;
  /** The invoice payment flushed, or null for a customer's deposit (deposit_id; migration 048: exactly one is set). */
  payment_id: string | null;
  invoice_id: string | null;
  deposit_id?: string | null;
  network: string;
  forwarder_id: string;
  deposit_address: string;
  factory: string;
  currency: string;
  token: string | null;
  amount: string;
  /** `waiting`, `flushing`, `flushed` or `failed` (flush_deposit_states). */
  state: string;
  flush_id: string | null;
  outcome: string | null;
  flushed_amount: string | null;
  gas_share: string;
  attempts: number;
  next_attempt_at: string;
  last_error: string | null;
  created_at: string;
  updated_at: string;
}

/** The operator's retry of a failed flush deposit (migration 038): the audit of POST /admin/v1/flush-deposits/{paymentId}/retry. */
export interface FlushDepositRetriesTable {
  id: string;
  deposit_id: string;
  payment_id: string;
  actor: string;
  attempts_before: number;
  last_error_before: string | null;
  created_at: string;
}

/** A customer's deposit address (migration 048, product §30): one per merchant, customer and ticker. */
export interface DepositAddressesTable {
  id: string;
  merchant_id: string;
  customer: string;
  currency: string;
  address: string;
  forwarder_id: string;
  factory: string;
  callback_url: string | null;
  active: number;
  created_at: string;
  updated_at: string;
}

/** A transfer to a customer's deposit address (migration 048): unique on (network, tx_id). */
export interface DepositsTable {
  id: string;
  deposit_address_id: string;
  merchant_id: string;
  network: string;
  tx_id: string;
  tx_hash: string;
  log_index: number | null;
  block_number: BigintColumn;
  block_hash: string;
  currency: string;
  amount: string;
  from_address: string;
  screening: string;
  status: string;
  confirmed: number;
  merchant_fee: string | null;
  network_fee: string | null;
  credited_amount: string | null;
  created_at: string;
  updated_at: string;
  /** Attempts to screen a `pending` sender, and when the next may be made (migration 049). */
  screening_attempts: number;
  screen_after: string | null;
}

/** A decision on a deposit (migration 049): the operator's on one in aml_check, the merchant's on a held one. */
export interface DepositDecisionsTable {
  id: string;
  deposit_id: string;
  decision: string;
  actor: string;
  status_after: string;
  reason: string | null;
  created_at: string;
}

export interface Database {
  deposit_decisions: DepositDecisionsTable;
  deposit_addresses: DepositAddressesTable;
  deposits: DepositsTable;
  networks: NetworksTable;
  scanned_blocks: ScannedBlocksTable;
  counters: CountersTable;
  sweeps: SweepsTable;
  flushes: FlushesTable;
  flush_deposits: FlushDepositsTable;
  flush_deposit_retries: FlushDepositRetriesTable;
  flush_states: { state: string };
  flush_deposit_states: { state: string };
  settings: SettingsTable;
  currencies: CurrenciesTable;
  merchants: MerchantsTable;
  api_keys: ApiKeysTable;
  dashboard_users: DashboardUsersTable;
  dashboard_sessions: DashboardSessionsTable;
  throttle_counters: ThrottleCountersTable;
  dashboard_totp_steps: DashboardTotpStepsTable;
  signin_failures_unattributed: SigninFailuresUnattributedTable;
  dashboard_memberships: DashboardMembershipsTable;
  dashboard_audit: DashboardAuditTable;
  withdrawal_methods: WithdrawalMethodsTable;
  ledger_movements: LedgerMovementsTable;
  ledger_entries: LedgerEntriesTable;
  ledger_balances: LedgerBalancesTable;
  invoices: InvoicesTable;
  invoice_payments: InvoicePaymentsTable;
  signed_requests: SignedRequestsTable;
  withdrawals: WithdrawalsTable;
  refunds: RefundsTable;
  refund_claims: RefundClaimsTable;
  payment_links: PaymentLinksTable;
  plans: PlansTable;
  subscriptions: SubscriptionsTable;
  subscription_invoices: SubscriptionInvoicesTable;
  payment_link_invoices: PaymentLinkInvoicesTable;
  payouts: PayoutsTable;
  payout_policies: PayoutPoliciesTable;
  payout_approval_requests: PayoutApprovalRequestsTable;
  payout_approvals: PayoutApprovalsTable;
  network_velocity_caps: NetworkVelocityCapsTable;
  velocity_spends: VelocitySpendsTable;
  events: EventsTable;
  network_payout_settings: NetworkPayoutSettingsTable;
  hot_transactions: HotTransactionsTable;
  wallet_authorizations: WalletAuthorizationsTable;
  renewal_authorizations: RenewalAuthorizationsTable;
  callback_events: CallbackEventsTable;
  callback_attempts: CallbackAttemptsTable;
  rate_readings: RateReadingsTable;
  card_checkouts: CardCheckoutsTable;
  card_provider_events: CardProviderEventsTable;
  card_disputes: CardDisputesTable;
  aml_decisions: AmlDecisionsTable;
  stray_payments: StrayPaymentsTable;
  stray_recoveries: StrayRecoveriesTable;
}

/** One card provider checkout per invoice (product §20). */
export interface CardCheckoutsTable {
  invoice_id: string;
  provider: string;
  /** The checkout's amount in the provider's minor units. */
  amount: string;
  expires_at: string;
  session_id: string | null;
  url: string | null;
  payment_id: string | null;
  created_at: string;
  updated_at: string;
}

/** Provider webhook events applied, by the provider's event id. */
export interface CardProviderEventsTable {
  event_id: string;
  provider: string;
  kind: string;
  outcome: string;
  received_at: string;
}

/** A card payment's dispute and the hold it put on the merchant's balance. */
/** The operator's screening decisions (migration 030): the audit of POST /admin/v1/invoices/{id}/aml. */
/** A transfer to a deposit address its invoice does not take (product §23, migration 033): the operator's to see, never credited. */
export interface StrayPaymentsTable {
  network: string;
  tx_id: string;
  /** The invoice whose deposit address it reached, or (migration 057) the customer's deposit address: exactly one. */
  invoice_id: string | null;
  deposit_address_id?: string | null;
  /** The catalog entry's key; `amount` is in its own units. Null (migration 057): a token the catalog lacks (`token`). */
  currency: string | null;
  /** The token contract (lowercase) of a token the catalog lacks; null otherwise. */
  token?: string | null;
  amount: string;
  from_address: string;
  block_number: BigintColumn;
  block_hash: string;
  created_at: string;
}

/** The operator's recovery of a stray at a forwarder (migration 057): a flush of its forwarder for its token, audited. */
export interface StrayRecoveriesTable {
  id: string;
  network: string;
  stray_tx_id: string;
  forwarder_id: string;
  deposit_address: string;
  factory: string;
  /** The ledger currency: the catalog entry, or `<network>:<contract>` for a token the catalog lacks. */
  currency: string;
  token: string | null;
  /** waiting, flushing, recovered, failed, returned. */
  state: string;
  flush_id: string | null;
  /** What the factory's Flushed event moved, in the token's minor units; null until settled. */
  amount: string | null;
  tx_hash: string | null;
  attempts: number;
  last_error: string | null;
  actor: string;
  returned_by: string | null;
  return_note: string | null;
  created_at: string;
  updated_at: string;
}

export interface AmlDecisionsTable {
  id: string;
  invoice_id: string;
  decision: string;
  actor: string;
  status_after: string;
  created_at: string;
  /** The flagged late payment decided on its own (migration 037); null: the invoice's decision. */
  payment_id: string | null;
}

export interface CardDisputesTable {
  dispute_id: string;
  invoice_id: string;
  merchant_id: string;
  payment_id: string;
  currency: string;
  /** The disputed amount, at most the payment's. */
  amount: string;
  /** The amount the provider's dispute named when it was above the payment (migration 039): the operator's flag; null otherwise. */
  provider_amount: string | null;
  hold_currency: string;
  held_amount: string;
  receivable_amount: string;
  status: string;
  reason: string;
  outcome: string | null;
  created_at: string;
  updated_at: string;
}

export interface DashboardUsersTable {
  id: string;
  merchant_id: string;
  email: string;
  role: string;
  password_hash: string | null;
  invite_hash: string | null;
  invite_expires_at: string | null;
  totp_secret_encrypted: string | null;
  totp_enabled: number;
  recovery_hashes: string | null;
  created_at: string;
}

export interface DashboardSessionsTable {
  token_hash: string;
  user_id: string;
  csrf_token: string;
  created_at: string;
  last_seen_at: string;
  step_up_at: string | null;
  /** The merchant this session works in (one of its login's memberships); migration 021. */
  merchant_id: string | null;
}

export interface DashboardMembershipsTable {
  id: string;
  user_id: string;
  merchant_id: string;
  role: string;
  invite_hash: string | null;
  invite_expires_at: string | null;
  accepted_at: string | null;
  created_at: string;
}

export interface ThrottleCountersTable {
  subject: string;
  window_started_at: string;
  attempts: number;
}

export interface DashboardTotpStepsTable {
  user_id: string;
  last_step: number;
}

export interface SigninFailuresUnattributedTable {
  id: string;
  address: string;
  created_at: string;
}

export interface DashboardAuditTable {
  id: string;
  merchant_id: string;
  user_id: string | null;
  user_email: string | null;
  action: string;
  target: string | null;
  address: string | null;
  created_at: string;
}

export interface NetworkPayoutSettingsTable {
  network: string;
  /** The operator's cap on a payout transaction's maxFeePerGas, in gwei (a plain decimal). */
  max_fee_per_gas_gwei: string;
  /** How long a broadcast transaction may stay unmined before it is replaced with higher fees. */
  replace_after_seconds: number;
  updated_at: string;
}

/** The hot wallet's outbox (product §26, migration 040): every transaction it signs, whatever its purpose. */
export interface HotTransactionsTable {
  id: string;
  /** One of HOT_TX_PURPOSES (src/domain/hotTransaction.ts). */
  purpose: string;
  /** The purpose's own id: a payout's request key, a flush's id, a sweep's id, the factory's address, `network:nonce` of a fill. */
  purpose_id: string;
  network: string;
  chain_id: number;
  /** The hot wallet's address, lowercase. */
  from_address: string;
  nonce: number;
  /** 0x-prefixed lowercase hex. */
  hash: string;
  /** The signed raw transaction (0x hex): the exact bytes broadcast. */
  raw: string;
  to_address: string;
  value_wei: string;
  /** The call's data (null: a plain transfer). */
  data: string | null;
  /** Token contract (lowercase) whose `token_amount` it carries out of the hot wallet; null: none. */
  token_contract: string | null;
  token_amount: string;
  gas_limit: string;
  max_fee_per_gas: string;
  max_priority_fee_per_gas: string;
  replaces_id: string | null;
  /** One of HOT_TX_STATES (src/domain/hotTransaction.ts). */
  state: string;
  broadcast_at: string | null;
  broadcast_count: number;
  last_error: string | null;
  block_number: string | null;
  block_hash: string | null;
  /** `success` or `reverted`, from the receipt; null until mined. */
  receipt_status: string | null;
  gas_used: string | null;
  effective_gas_price: string | null;
  created_at: string;
  updated_at: string;
}

/** A payer's ReceiveWithAuthorization signed ahead for one period of a subscription (product §29, migration 045). */
export interface RenewalAuthorizationsTable {
  id: string;
  subscription_id: string;
  period: number;
  network: string;
  /** The catalog entry the tokens are of (its internalTicker). */
  currency: string;
  token: string;
  from_address: string;
  /** bytes32 hex, derived from the subscription, the period and the payer (renewalNonce). */
  nonce: string;
  /** In the token's units. */
  value: string;
  /** Unix seconds. */
  valid_after: string;
  valid_before: string;
  signature: string;
  /** One of RENEWAL_STATES (src/domain/renewalAuthorizations.ts). */
  state: string;
  /** The wallet authorization it became when its period's invoice was made. */
  wallet_authorization_id: string | null;
  created_at: string;
  updated_at: string;
}

/** A payer's signed authorization (product §28, migration 043): the hot wallet submits it through the outbox (purpose `submission`, purpose_id = id). */
export interface WalletAuthorizationsTable {
  id: string;
  invoice_id: string;
  network: string;
  /** The catalog entry the tokens are of (its internalTicker). */
  currency: string;
  /** `eip3009` or `permit2`. */
  kind: string;
  token: string;
  from_address: string;
  /** EIP-3009: bytes32 hex; Permit2: a uint256 in decimal. */
  nonce: string;
  value: string;
  /** Unix seconds; Permit2 has no start (0). */
  valid_after: string;
  /** Unix seconds: EIP-3009's validBefore, Permit2's deadline. */
  valid_before: string;
  signature: string;
  /** One of WALLET_AUTHORIZATION_STATES (src/domain/walletAuthorization.ts). */
  state: string;
  failure: string | null;
  created_at: string;
  updated_at: string;
}
