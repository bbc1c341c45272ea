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

export interface Database {
  settings: SettingsTable;
  currencies: CurrenciesTable;
  merchants: MerchantsTable;
  api_keys: ApiKeysTable;
  withdrawal_methods: WithdrawalMethodsTable;
  ledger_movements: LedgerMovementsTable;
  ledger_entries: LedgerEntriesTable;
  ledger_balances: LedgerBalancesTable;
  invoices: InvoicesTable;
  invoice_payments: InvoicePaymentsTable;
}
