// Addresses the database records as the service's own or as contracts (product §25): a refund claimed to one of them would never reach the payer.
import { addressKey } from "../domain/evmAddress.ts";
import { liveDeposit } from "./chainPayments.ts";
import type { Tx } from "./store.ts";

/** What a recorded address is: a catalog token's contract, a deposit address (forwarder or derived), a factory, or a hot wallet. */
export type RecordedAddressKind = "token_contract" | "deposit_address" | "factory" | "hot_wallet";

/**
 * The kind of `address` (checksummed) if the database records it as the service's own or as a
 * catalog token's contract, on any network (an EVM address is the same account on every network):
 * each query reads at most one row, through the catalog, the networks (a few rows each), the deposit
 * address index or the outbox's indexes (the factory's deployments, every hot wallet that signed).
 */
export async function recordedAddressKind(tx: Tx, address: string): Promise<RecordedAddressKind | null> {
  const key = addressKey(address);
  const lower = (column: "contract_address") => tx.db.fn<string>("lower", [column]);
  const contract = await tx.db
    .selectFrom("currencies")
    .select("ticker")
    .where((eb) => eb(lower("contract_address"), "=", key))
    .executeTakeFirst();
  if (contract) return "token_contract";
  const deposit = await tx.db
    .selectFrom("invoices")
    .select("id")
    .where("deposit_address", "in", [address, key])
    .where(liveDeposit)
    .executeTakeFirst();
  if (deposit) return "deposit_address";
  const network = await tx.db
    .selectFrom("networks")
    .select(["factory_address", "hot_nonce_address"])
    .where((eb) => eb.or([eb("factory_address", "=", key), eb("hot_nonce_address", "=", key)]))
    .executeTakeFirst();
  if (network) return network.factory_address === key ? "factory" : "hot_wallet";
  const deployment = await tx.db
    .selectFrom("hot_transactions")
    .select("purpose_id")
    .where("purpose", "=", "deployment")
    .where("purpose_id", "=", key)
    .limit(1)
    .executeTakeFirst();
  if (deployment) return "factory";
  // Every hot wallet that ever signed here, the earlier ones too (one index seek).
  const signer = await tx.db
    .selectFrom("hot_transactions")
    .select("id")
    .where("from_address", "=", key)
    .limit(1)
    .executeTakeFirst();
  if (signer) return "hot_wallet";
  return null;
}
