// Transfers to customers' deposit addresses as the scanner sees them (product §30): recorded once per (network, tx id), settled at confirmation (credited with the fees of §4, dust, held or screened), flushed, and undone by a reorganisation, with their events; the scanner receives these as a port.
import {
  type DepositOutcome,
  type DepositScreening,
  depositCreditMovement,
  depositOutcome,
  depositParkMovement,
} from "../domain/depositAddresses.ts";
import { newRowId } from "../domain/ids.ts";
import { parseDecimal } from "../domain/money.ts";
import { assert } from "../domain/result.ts";
import { findCurrency } from "../store/currencies.ts";
import {
  type CustomerTransfer,
  type DepositRow,
  depositObject,
  findDepositAddressById,
  insertDeposit,
  moveDeposit,
  pendingDepositsAfter,
} from "../store/depositAddresses.ts";
import { recordDepositEvent } from "../store/events.ts";
import { queueCustomerFlushDeposit } from "../store/flushes.ts";
import { findMerchant } from "../store/merchants.ts";
import { chainTxId, postCredit } from "../store/settlement.ts";
import type { Tx } from "../store/store.ts";

/** The scanner's port for customers' deposits (src/chain/scanner.ts CustomerDeposits). */
export const customerDeposits = {
  record: recordCustomerTransfer,
  confirm: confirmCustomerDeposit,
  reverse: reverseCustomerDeposits,
};

/**
 * Records a transfer once per (network, tx id); a transfer reorganised away and mined again is
 * pending again (same deposit). Settled at once when already deep. Answers whether anything changed.
 */
export async function recordCustomerTransfer(tx: Tx, t: CustomerTransfer, now: string): Promise<boolean> {
  const id = newRowId();
  const row = await insertDeposit(tx, {
    id,
    deposit_address_id: t.address.id,
    merchant_id: t.address.merchant_id,
    network: t.place.network,
    tx_id: chainTxId(t.place),
    tx_hash: t.place.txHash,
    log_index: t.place.logIndex,
    block_number: t.place.blockNumber.toString(),
    block_hash: t.place.blockHash,
    currency: t.entry.ticker,
    amount: t.amountMinor.toString(),
    from_address: t.fromAddress,
    screening: t.screening,
    screening_attempts: 0,
    screen_after: null,
    status: "pending",
    confirmed: 0,
    merchant_fee: null,
    network_fee: null,
    credited_amount: null,
    created_at: now,
    updated_at: now,
  });
  let current: DepositRow | null = row;
  const fresh = row.id === id;
  if (row.status === "reversed") {
    const again = { block_number: t.place.blockNumber.toString(), block_hash: t.place.blockHash };
    current = await moveDeposit(tx, row.id, "reversed", { ...again, status: "pending", screening: t.screening }, now);
  } else if (!fresh) {
    return false;
  }
  if (current !== null && t.confirmed) await confirmCustomerDeposit(tx, current, now);
  return current !== null;
}

/**
 * A deposit deep enough: its outcome decided (domain depositOutcome), moved by compare-and-set
 * (once), its money posted, queued for a flush (whatever the outcome, the forwarder holds it), and
 * `deposit.completed` when credited.
 */
export async function confirmCustomerDeposit(tx: Tx, row: DepositRow, now: string): Promise<boolean> {
  const address = await findDepositAddressById(tx, row.deposit_address_id);
  const entry = await findCurrency(tx, row.currency);
  const merchant = await findMerchant(tx, row.merchant_id);
  assert(
    address !== null && entry !== null && merchant !== null,
    `deposit ${row.id} has its address, entry and merchant`,
  );
  const feePercent = parseDecimal(merchant.feePercent);
  assert(feePercent !== null, `merchant ${merchant.id} has a fee percent`);
  const amount = BigInt(row.amount);
  const outcome = depositOutcome({
    amount,
    entry,
    plan: { feePercent },
    screening: row.screening as DepositScreening,
    active: address.active === 1,
  });
  const moved = await moveDeposit(tx, row.id, "pending", { ...amountsOf(outcome), confirmed: 1 }, now);
  if (moved === null) return false;
  const money = { depositId: row.id, merchantId: row.merchant_id, currency: entry.ticker, amount };
  if (outcome.status === "completed") await postCredit(tx, depositCreditMovement(money, outcome.fees, "incoming"), now);
  else if (outcome.status !== "aml_check") await postCredit(tx, depositParkMovement(money, outcome.status), now);
  await queueCustomerFlushDeposit(
    tx,
    {
      depositId: row.id,
      network: row.network,
      forwarderId: address.forwarder_id,
      depositAddress: address.address,
      factory: address.factory,
      currency: entry.ticker,
      token: entry.contractAddress,
      amountMinor: amount,
    },
    now,
  );
  if (outcome.status === "completed") {
    const callbackUrl = address.callback_url ?? merchant.defaultCallbackUrl;
    // Only a held deposit is ever refunded: one confirmed just now has no refund.
    const deposit = depositObject(moved, address, entry.decimals, null);
    await recordDepositEvent(tx, "deposit.completed", deposit, { merchantId: row.merchant_id, callbackUrl, now });
  }
  return true;
}

function amountsOf(outcome: DepositOutcome) {
  return {
    status: outcome.status,
    merchant_fee: outcome.fees?.merchantFee.toString() ?? null,
    network_fee: outcome.fees?.networkFee.toString() ?? null,
    credited_amount: outcome.fees?.credit.toString() ?? null,
  };
}

/**
 * A reorganisation replaced the blocks after `forkBlock`: their unconfirmed deposits never
 * happened on the chain that won. Each is kept `reversed` (the merchant may have seen it pending)
 * with `deposit.reversed`; nothing was posted for it. Answers how many.
 */
export async function reverseCustomerDeposits(tx: Tx, network: string, forkBlock: bigint, now: string) {
  let reversed = 0;
  for (const row of await pendingDepositsAfter(tx, network, forkBlock)) {
    const moved = await moveDeposit(tx, row.id, "pending", { status: "reversed" }, now);
    if (moved === null) continue;
    reversed++;
    const address = await findDepositAddressById(tx, row.deposit_address_id);
    const entry = await findCurrency(tx, row.currency);
    const merchant = await findMerchant(tx, row.merchant_id);
    if (address === null || entry === null || merchant === null) continue;
    const callbackUrl = address.callback_url ?? merchant.defaultCallbackUrl;
    // Only a held (so confirmed) deposit is ever refunded: an unconfirmed one has no refund.
    const deposit = depositObject(moved, address, entry.decimals, null);
    await recordDepositEvent(tx, "deposit.reversed", deposit, { merchantId: row.merchant_id, callbackUrl, now });
  }
  return reversed;
}
