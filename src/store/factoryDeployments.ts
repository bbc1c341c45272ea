// The forwarder factory per network (product §24): where it is recorded deployed, and its deployment transactions in the hot wallet's outbox.
import type { Tx } from "./store.ts";

/** A deployment of the factory by the hot wallet, as the operator sees it: one outbox transaction of purpose `deployment`. */
export interface FactoryDeployment {
  network: string;
  /** Lowercase: the factory of the hot wallet that signed. */
  factory: string;
  nonce: number;
  hash: string;
  createdAt: string;
}

/** Each network's recorded factory (lowercase address), null where none was recorded deployed. */
export async function recordedFactories(tx: Tx): Promise<Map<string, string | null>> {
  const rows = await tx.db
    .selectFrom("networks")
    .select(["name", "factory_address", "factory_deployed_at"])
    .orderBy("name")
    .execute();
  return new Map(rows.map((r) => [r.name, r.factory_deployed_at ? (r.factory_address ?? null) : null]));
}

/**
 * Records `factory` (lowercase) deployed on `network`, its code checked by the caller. The first
 * time stays: recording the same factory again changes nothing; another factory (a new hot wallet)
 * replaces it.
 */
export async function recordFactoryDeployed(tx: Tx, network: string, factory: string, now: string): Promise<void> {
  await tx.db
    .updateTable("networks")
    .set({ factory_address: factory.toLowerCase(), factory_deployed_at: now })
    .where("name", "=", network)
    .where((eb) =>
      eb.or([
        eb("factory_address", "is", null),
        eb("factory_deployed_at", "is", null),
        eb("factory_address", "!=", factory.toLowerCase()),
      ]),
    )
    .execute();
}

const OPEN = ["signed", "broadcast", "dropped", "mined"] as const;

/** The deployments in flight (not final) on every network, by network: the newest transaction of each (GET /admin/v1/networks). */
export async function pendingDeployments(tx: Tx, network?: string): Promise<Map<string, FactoryDeployment>> {
  const rows = await tx.db
    .selectFrom("hot_transactions")
    .select(["network", "purpose_id", "nonce", "hash", "created_at"])
    .where("purpose", "=", "deployment")
    .where("state", "in", [...OPEN])
    .$if(network !== undefined, (qb) => qb.where("network", "=", network as string))
    .orderBy("network")
    .orderBy("created_at")
    .limit(1000)
    .execute();
  const byNetwork = new Map<string, FactoryDeployment>();
  for (const r of rows) {
    const d = {
      network: r.network,
      factory: r.purpose_id,
      nonce: Number(r.nonce),
      hash: r.hash,
      createdAt: r.created_at,
    };
    byNetwork.set(r.network, d);
  }
  return byNetwork;
}

/** The hash of the confirmed deployment of `factory` on `network`, if this service sent one (the answer of a later call). */
export async function minedDeploymentHash(tx: Tx, network: string, factory: string): Promise<string | null> {
  const row = await tx.db
    .selectFrom("hot_transactions")
    .select("hash")
    .where("network", "=", network)
    .where("purpose", "=", "deployment")
    .where("purpose_id", "=", factory.toLowerCase())
    .where("state", "in", ["confirmed", "reverted"])
    .orderBy("created_at", "desc")
    .limit(1)
    .executeTakeFirst();
  return row?.hash ?? null;
}
