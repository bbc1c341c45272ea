// The money rails' invariants, read from the store and the simulated chains: checked after every step, and in full once faults stop.
import { getAddress, type Hex } from "viem";
import { SYSTEM_ACCOUNTS } from "../src/domain/ledger.ts";
import { auditLedger } from "../src/store/ledger.ts";
import type { World } from "./world.ts";

export interface Violation {
  invariant: string;
  detail: string;
}

/**
 * The audit reads from one snapshot: on PostgreSQL a process may commit between two statements
 * (its commits are real I/O), so the entries and the cached balances are read in one repeatable-read
 * transaction. SQLite commits only inside a step.
 */
function auditOf(world: World) {
  if (world.reads.dialect !== "postgres") return auditLedger(world.reads);
  return world.reads.db
    .transaction()
    .setIsolationLevel("repeatable read")
    .execute((trx) => auditLedger({ db: trx, dialect: "postgres" }));
}

/** The ledger balances and no merchant's balance is negative. */
async function ledgerBalanced(world: World): Promise<Violation[]> {
  const audit = await auditOf(world);
  const found: Violation[] = [];
  for (const [currency, sum] of audit.sumsByCurrency) {
    if (sum !== 0n) found.push({ invariant: "ledger-balanced", detail: `${currency} sums to ${sum}` });
  }
  for (const m of audit.mismatchedBalances) {
    found.push({
      invariant: "ledger-balanced",
      detail: `${m.account} ${m.currency} cached ${m.cached} != ${m.fromEntries}`,
    });
  }
  for (const n of audit.negativeMerchantBalances) {
    found.push({ invariant: "no-negative-balance", detail: `${n.account} ${n.currency} is ${n.balance}` });
  }
  return found;
}

/**
 * Every transaction the hot wallet got mined is one the outbox stored (stored before broadcast),
 * and no payout's tokens went out twice (two of its transactions mined).
 */
async function payoutsSentAtMostOnce(world: World): Promise<Violation[]> {
  const rows = await world.reads.db
    .selectFrom("hot_transactions")
    .select(["purpose", "purpose_id", "hash", "network"])
    .execute();
  const byHash = new Map(rows.map((r) => [r.hash.toLowerCase(), r]));
  const hot = world.wallet.hotAddress.toLowerCase();
  const found: Violation[] = [];
  const minedPerPayout = new Map<string, number>();
  for (const network of world.networks.values()) {
    for (const tx of network.chain.minedTransactions()) {
      if (tx.from.toLowerCase() !== hot) continue;
      const row = byHash.get(tx.hash.toLowerCase());
      if (!row) {
        found.push({
          invariant: "stored-before-broadcast",
          detail: `${network.spec.name} nonce ${tx.nonce} ${tx.hash} is not in the outbox`,
        });
        continue;
      }
      if (row.purpose === "payout" && tx.status === "success") {
        minedPerPayout.set(row.purpose_id, (minedPerPayout.get(row.purpose_id) ?? 0) + 1);
      }
    }
  }
  for (const [payout, count] of minedPerPayout) {
    if (count > 1)
      found.push({ invariant: "payout-sent-at-most-once", detail: `payout ${payout} was mined ${count} times` });
  }
  return found;
}

export async function checkAlways(world: World): Promise<Violation[]> {
  const found = [...(await ledgerBalanced(world)), ...(await payoutsSentAtMostOnce(world))];
  for (const error of world.taskErrors.splice(0)) found.push({ invariant: "no-task-error", detail: error });
  return found;
}

/** Once faults stopped and the rails had time: every invoice and payout ended, every nonce mined. */
async function everythingEnded(world: World): Promise<Violation[]> {
  const found: Violation[] = [];
  const open = await world.reads.db
    .selectFrom("payouts")
    .select(["request_id", "state", "last_error"])
    .where("state", "not in", ["completed", "failed"])
    .execute();
  for (const p of open) {
    found.push({
      invariant: "payout-ends",
      detail: `payout ${p.request_id} still ${p.state} (${p.last_error ?? "no error"})`,
    });
  }
  // Past every expiry, an invoice has ended: one left open holds its payments back for good.
  const invoices = await world.reads.db
    .selectFrom("invoices")
    .select(["id", "status", "expiry_deferred"])
    .where("status", "in", ["pending", "processing", "aml_check"])
    .execute();
  for (const i of invoices) {
    found.push({
      invariant: "invoice-ends",
      detail: `invoice ${i.id} still ${i.status}${i.expiry_deferred ? " (its expiry deferred)" : ""}`,
    });
  }
  const recoveries = await world.reads.db
    .selectFrom("stray_recoveries")
    .select(["id", "state", "last_error"])
    .where("state", "in", ["waiting", "flushing"])
    .execute();
  for (const r of recoveries) {
    found.push({
      invariant: "recovery-ends",
      detail: `stray recovery ${r.id} still ${r.state} (${r.last_error ?? "no error"})`,
    });
  }
  const hot = world.wallet.hotAddress;
  for (const network of world.networks.values()) {
    const client = network.chain.client();
    const [latest, pending] = [await client.nonce(hot, "latest"), await client.nonce(hot, "pending")];
    const stored = await world.reads.db
      .selectFrom("hot_transactions")
      .select((eb) => eb.fn.max("nonce").as("nonce"))
      .where("network", "=", network.spec.name)
      .executeTakeFirst();
    const highest = stored?.nonce === null || stored?.nonce === undefined ? -1 : Number(stored.nonce);
    if (!latest.ok || !pending.ok) continue;
    if (latest.value !== pending.value || highest >= latest.value) {
      found.push({
        invariant: "nonces-mined",
        detail: `${network.spec.name}: the outbox holds nonces to ${highest}, the chain mined ${latest.value}, ${pending.value - latest.value} pending`,
      });
    }
  }
  return found;
}

/** Every transfer to a deposit address on the final chain is counted once (as a payment or a stray), and nothing counted is missing from it. */
async function depositsCountedOnce(world: World): Promise<Violation[]> {
  const found: Violation[] = [];
  const addresses = new Set(world.invoices.map((i) => getAddress(i.address)));
  const payments = await world.reads.db
    .selectFrom("invoice_payments")
    .select(["network", "tx_hash", "log_index", "confirmed", "block_hash"])
    .where("network", "is not", null)
    .execute();
  const strays = await world.reads.db.selectFrom("stray_payments").select(["network", "tx_id", "block_hash"]).execute();
  const counted = new Map<string, number>();
  for (const p of payments) {
    const key = `${p.network}:${String(p.tx_hash).toLowerCase()}:${p.log_index}`;
    counted.set(key, (counted.get(key) ?? 0) + 1);
  }
  for (const s of strays) {
    const key = `${s.network}:${s.tx_id.toLowerCase()}`;
    counted.set(key, (counted.get(key) ?? 0) + 1);
  }
  const onChain = new Set<string>();
  for (const network of world.networks.values()) {
    for (const log of network.chain.transferLogs()) {
      if (getAddress(log.contract) !== getAddress(network.token) || !addresses.has(getAddress(log.to))) continue;
      const key = `${network.spec.name}:${log.transactionHash.toLowerCase()}:${log.logIndex}`;
      onChain.add(key);
      const count = counted.get(key) ?? 0;
      if (count !== 1)
        found.push({ invariant: "deposit-counted-once", detail: `${key} (${log.value}) counted ${count} times` });
    }
  }
  for (const key of counted.keys()) {
    if (!onChain.has(key))
      found.push({ invariant: "nothing-counted-off-chain", detail: `${key} is not on the final chain` });
  }
  return found;
}

/** A ledger account's balance in one currency, from its entries (summed here: amounts are text on PostgreSQL). */
async function accountBalance(world: World, account: string, currency: string): Promise<bigint> {
  const rows = await world.reads.db
    .selectFrom("ledger_entries")
    .select("amount")
    .where("account", "=", account)
    .where("currency", "=", currency)
    .execute();
  return rows.reduce((sum, r) => sum + BigInt(r.amount), 0n);
}

/**
 * What the ledger says the operator holds of each entry (all it took in, and was given by the
 * operator, less all it paid out, once
 * every payment was settled or resolved), plus the strays it holds outside the ledger, equals the
 * hot wallet's and the deposit addresses' tokens on that entry's chain.
 */
async function holdingsMatch(world: World): Promise<Violation[]> {
  const found: Violation[] = [];
  for (const network of world.networks.values()) {
    const entries = await world.reads.db
      .selectFrom("currencies")
      .select(["ticker", "contract_address"])
      .where("network", "=", network.spec.name)
      .execute();
    const entry = entries.find((e) => e.contract_address?.toLowerCase() === network.token.toLowerCase());
    if (!entry) {
      found.push({ invariant: "holdings-match", detail: `no catalog entry for the token on ${network.spec.name}` });
      continue;
    }
    // Payers' money in, payouts out, and the operator's own (the opening balances it put in the hot wallet).
    const external =
      (await accountBalance(world, SYSTEM_ACCOUNTS.incomingPayments, entry.ticker)) +
      (await accountBalance(world, SYSTEM_ACCOUNTS.payouts, entry.ticker)) +
      (await accountBalance(world, SYSTEM_ACCOUNTS.operatorAdjustments, entry.ticker));
    const strays = await world.reads.db
      .selectFrom("stray_payments")
      .select("amount")
      .where("network", "=", network.spec.name)
      .execute();
    // A recovered stray is in the ledger (incoming payments → operator:stray:<network>): counted there, not again.
    const recovered = await world.reads.db
      .selectFrom("stray_recoveries")
      .select("amount")
      .where("network", "=", network.spec.name)
      .where("currency", "=", entry.ticker)
      .where("state", "in", ["recovered", "returned"])
      .execute();
    const outside =
      strays.reduce((sum, s) => sum + BigInt(s.amount), 0n) -
      recovered.reduce((sum, s) => sum + BigInt(s.amount ?? "0"), 0n);
    const ledgerHeld = -external + outside;
    let chainHeld = await network.chain.tokenBalance(network.token, world.wallet.hotAddress);
    for (const address of new Set(world.invoices.map((i) => i.address))) {
      chainHeld += await network.chain.tokenBalance(network.token, address as Hex);
    }
    if (ledgerHeld !== chainHeld) {
      found.push({
        invariant: "holdings-match",
        detail: `${entry.ticker} on ${network.spec.name}: the ledger (and strays) hold ${ledgerHeld}, the chain ${chainHeld}`,
      });
    }
  }
  return found;
}

export async function checkFinal(world: World): Promise<Violation[]> {
  return [
    ...(await checkAlways(world)),
    ...(await everythingEnded(world)),
    ...(await depositsCountedOnce(world)),
    ...(await holdingsMatch(world)),
  ];
}
