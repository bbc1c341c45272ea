// The operator's recovery of a stray payment at a forwarder (issue 50): queued once per stray for the flusher, which moves the forwarder's balance of its token to the hot wallet through the outbox; once recovered it is the operator's stray funds in the ledger until marked returned.
import { type Address, FACTORY_VERSIONS, factoryAddress, forwarderId } from "../domain/forwarders.ts";
import { movement, SYSTEM_ACCOUNTS, strayFundsAccount, transfer } from "../domain/ledger.ts";
import { assert } from "../domain/result.ts";
import { recordedFactories } from "../store/factoryDeployments.ts";
import { postMovement } from "../store/ledger.ts";
import { nowIso, type Tx } from "../store/store.ts";
import { findStrayPayment, type StrayPayment } from "../store/strayPayments.ts";
import {
  findStrayRecovery,
  markReturned,
  type NewStrayRecovery,
  queueStrayRecovery,
  type StrayRecovery,
} from "../store/strayRecoveries.ts";
import type { ServiceContext } from "./context.ts";
import { type Outcome, refuse, withRefusals } from "./refusal.ts";

export type StrayRecoveryRefusal =
  | "stray_payment_not_found"
  | "stray_not_at_forwarder"
  | "stray_factory_not_deployed"
  | "wallet_not_configured";

/** A stray's id on the operator API: `<network>:<txId>` (its primary key). */
export function strayId(network: string, txId: string): string {
  return `${network}:${txId}`;
}

function parseStrayId(id: string): { network: string; txId: string } | null {
  const at = id.indexOf(":");
  if (at <= 0 || at === id.length - 1) return null;
  return { network: id.slice(0, at), txId: id.slice(at + 1) };
}

async function findStray(tx: Tx, id: string): Promise<StrayPayment> {
  const key = parseStrayId(id);
  const stray = key === null ? undefined : await findStrayPayment(tx, key.network, key.txId);
  if (stray === undefined) return refuse("stray_payment_not_found", `No stray payment ${id}.`, "/", null);
  return stray;
}

/** The forwarder the stray reached: an invoice's forwarder deposit address or a customer's (always one). */
async function forwarderOf(tx: Tx, stray: StrayPayment) {
  if (stray.invoiceId !== null) {
    const invoice = await tx.db
      .selectFrom("invoices")
      .select(["deposit_address", "deposit_factory"])
      .where("id", "=", stray.invoiceId)
      .executeTakeFirst();
    if (invoice?.deposit_address && invoice.deposit_factory) {
      return {
        forwarderId: forwarderId(stray.invoiceId) as string,
        address: invoice.deposit_address,
        factory: invoice.deposit_factory,
      };
    }
    return null;
  }
  const address = await tx.db
    .selectFrom("deposit_addresses")
    .select(["address", "forwarder_id", "factory"])
    .where("id", "=", stray.depositAddressId ?? "")
    .executeTakeFirst();
  return address === undefined
    ? null
    : { forwarderId: address.forwarder_id, address: address.address, factory: address.factory };
}

/** The token the flush moves (null: the native coin) and the ledger currency it is kept in. */
async function tokenOf(tx: Tx, stray: StrayPayment): Promise<{ token: string | null; currency: string }> {
  if (stray.currency === null) {
    const token = stray.token ?? null;
    assert(token !== null, `stray ${stray.txId} names its entry or its token`);
    return { token, currency: `${stray.network}:${token.toLowerCase()}` };
  }
  const entry = await tx.db
    .selectFrom("currencies")
    .select("contract_address")
    .where("ticker", "=", stray.currency)
    .executeTakeFirstOrThrow();
  return { token: entry.contract_address ?? null, currency: stray.currency };
}

/**
 * Queues the recovery of stray `id` (`<network>:<txId>`) for the next flush of its network,
 * recording `actor`: the forwarder's whole balance of the stray's token moves to the hot wallet.
 * Idempotent: a stray already recovering (or recovered) is answered as it is, nothing moves twice.
 * Refused: not found; not at a forwarder (a derived deposit address); no factory of this hot wallet
 * recorded deployed on its network; no hot wallet.
 */
export function recoverStray(
  ctx: ServiceContext,
  id: string,
  actor: string,
): Promise<Outcome<StrayRecovery, StrayRecoveryRefusal>> {
  return withRefusals(() =>
    ctx.store.transaction(async (tx) => {
      const stray = await findStray(tx, id);
      const existing = await findStrayRecovery(tx, stray.network, stray.txId);
      if (existing !== undefined) return existing;
      if (ctx.wallet === null) {
        return refuse("wallet_not_configured", "WALLET_MNEMONIC is not set: nothing can flush.", "/", null);
      }
      const forwarder = await forwarderOf(tx, stray);
      if (forwarder === null) {
        const detail =
          "The stray reached a derived deposit address, not a forwarder: move it with that address's key by hand (docs/operations.md).";
        return refuse("stray_not_at_forwarder", detail, "/", null);
      }
      // The forwarder's own factory empties it: any version of this hot wallet's, on a network with one deployed.
      const factory = forwarder.factory.toLowerCase();
      const hot = ctx.wallet.hotAddress as Address;
      const ours = FACTORY_VERSIONS.some((v) => factoryAddress(hot, v).toLowerCase() === factory);
      const deployed = (await recordedFactories(tx)).get(stray.network) ?? null;
      if (!ours || deployed === null) {
        const detail = `The forwarder's factory ${forwarder.factory} is not this hot wallet's factory recorded deployed on ${stray.network} (POST /admin/v1/networks/${stray.network}/factory).`;
        return refuse("stray_factory_not_deployed", detail, "/", null);
      }
      const request: NewStrayRecovery = {
        network: stray.network,
        strayTxId: stray.txId,
        forwarderId: forwarder.forwarderId,
        depositAddress: forwarder.address,
        factory,
        ...(await tokenOf(tx, stray)),
        actor,
      };
      return (await queueStrayRecovery(tx, request, nowIso())).recovery;
    }),
  );
}

/**
 * Marks a recovered stray returned to its sender (the operator sent it from the hot wallet by hand,
 * `note` says how): the operator's stray funds are debited to the payouts. Idempotent once returned.
 */
export function markStrayReturned(
  ctx: ServiceContext,
  id: string,
  by: { actor: string; note: string },
): Promise<Outcome<StrayRecovery, "stray_payment_not_found" | "stray_not_recovered">> {
  return withRefusals(() =>
    ctx.store.transaction(async (tx) => {
      const stray = await findStray(tx, id);
      const recovery = await findStrayRecovery(tx, stray.network, stray.txId);
      if (recovery?.state === "returned") return recovery;
      if (recovery?.state !== "recovered") {
        const detail = `The stray is ${recovery?.state ?? "not recovering"}: only a recovered stray can be marked returned.`;
        return refuse("stray_not_recovered", detail, "/", null);
      }
      const now = nowIso();
      if (await markReturned(tx, recovery.id, by, now)) await postReturn(tx, recovery, by.note, now);
      const after = await findStrayRecovery(tx, stray.network, stray.txId);
      assert(after, "a recovery is never deleted");
      return after;
    }),
  );
}

async function postReturn(tx: Tx, recovery: StrayRecovery, note: string, now: string): Promise<void> {
  const amount = recovery.amountMinor ?? 0n;
  if (amount === 0n) return;
  const posted = await postMovement(
    tx,
    movement({
      cause: "stray_recovery",
      causeId: recovery.id,
      kind: "returned",
      memo: `stray ${recovery.strayTxId} returned: ${note}`,
      postings: transfer(strayFundsAccount(recovery.network), SYSTEM_ACCOUNTS.payouts, recovery.currency, amount),
    }),
    now,
  );
  assert(posted.ok || posted.error === "already_posted", `the return of stray recovery ${recovery.id} is posted once`);
}
