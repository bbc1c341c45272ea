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
}

export interface WithdrawalMethodsTable {
  id: Generated<number>;
  merchant_id: string;
  currency: string;
  address: string;
  label: string | null;
  created_at: string;
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
  /** `none`, `flagged`, `cleared` or `blocked`. */
  aml_status: string;
  /** The card payment provider (`sandbox_card`); null for an on-chain payment. */
  provider: string | null;
  created_at: string;
  updated_at: string;
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
  invoice_id: string;
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

export interface CallbackEventsTable {
  /** Recording order; the events of one invoice are delivered in this order. */
  seq: Generated<number>;
  id: string;
  invoice_id: string;
  merchant_id: string;
  /** `invoice.<status>`. */
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

export interface Database {
  settings: SettingsTable;
  currencies: CurrenciesTable;
  merchants: MerchantsTable;
  api_keys: ApiKeysTable;
  dashboard_users: DashboardUsersTable;
  dashboard_sessions: DashboardSessionsTable;
  dashboard_signin_failures: DashboardSigninFailuresTable;
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
  payouts: PayoutsTable;
  callback_events: CallbackEventsTable;
  callback_attempts: CallbackAttemptsTable;
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
}

export interface DashboardSigninFailuresTable {
  id: string;
  subject: string;
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
