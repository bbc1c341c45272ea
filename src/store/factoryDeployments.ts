// The forwarder factory per network (product §24): where it is recorded deployed, and its deployment transaction by the hot wallet.
import { newRowId } from "../domain/ids.ts";
import { movement, SYSTEM_ACCOUNTS, transfer } from "../domain/ledger.ts";
import { assert } from "../domain/result.ts";
import { postMovement } from "./ledger.ts";
import type { Tx } from "./store.ts";

export type FactoryDeploymentState = "signed" | "mined" | "failed" | "replaced";

export interface FactoryDeployment {
  id: string;
  network: string;
  /** Lowercase, as the owner. */
  factory: string;
  fromAddress: string;
  nonce: number;
  hash: string;
  raw: string;
  state: FactoryDeploymentState;
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

function fromRow(r: {
  id: string;
  network: string;
  factory: string;
  from_address: string;
  nonce: number | string;
  hash: string;
  raw: string;
  state: string;
  created_at: string;
}): FactoryDeployment {
  return {
    id: r.id,
    network: r.network,
    factory: r.factory,
    fromAddress: r.from_address,
    nonce: Number(r.nonce),
    hash: r.hash,
    raw: r.raw,
    state: r.state as FactoryDeploymentState,
    createdAt: r.created_at,
  };
}

/** The deployment of `network` in flight (signed, not yet mined), if any: at most one (a unique index). */
export async function pendingDeployment(tx: Tx, network: string): Promise<FactoryDeployment | null> {
  const row = await tx.db
    .selectFrom("factory_deployments")
    .selectAll()
    .where("network", "=", network)
    .where("state", "=", "signed")
    .executeTakeFirst();
  return row ? fromRow(row) : null;
}

/** The deployments in flight on every network, by network (GET /admin/v1/networks). */
export async function pendingDeployments(tx: Tx): Promise<Map<string, FactoryDeployment>> {
  const rows = await tx.db
    .selectFrom("factory_deployments")
    .selectAll()
    .where("state", "=", "signed")
    .orderBy("network")
    .limit(1000)
    .execute();
  return new Map(rows.map((r) => [r.network, fromRow(r)]));
}

/** Stores a signed deployment before it is broadcast (in the transaction that took its nonce). */
export async function insertDeployment(
  tx: Tx,
  d: Omit<FactoryDeployment, "id" | "state" | "createdAt">,
  now: string,
): Promise<FactoryDeployment> {
  const row = {
    id: newRowId(),
    network: d.network,
    factory: d.factory.toLowerCase(),
    from_address: d.fromAddress.toLowerCase(),
    nonce: d.nonce,
    hash: d.hash,
    raw: d.raw,
    state: "signed",
    gas_wei: null,
    created_at: now,
    updated_at: now,
  };
  await tx.db.insertInto("factory_deployments").values(row).execute();
  return fromRow(row);
}

/**
 * A deployment is over: mined (its gas, the operator's, ledgered once under its id; `failed` when
 * it reverted) or replaced (another transaction took its nonce). Compare-and-set from `signed`.
 */
export async function settleDeployment(
  tx: Tx,
  d: FactoryDeployment,
  outcome: { state: "mined" | "failed"; gasWei: bigint; nativeCurrency: string | null } | { state: "replaced" },
  now: string,
): Promise<boolean> {
  const result = await tx.db
    .updateTable("factory_deployments")
    .set({
      state: outcome.state,
      updated_at: now,
      ...("gasWei" in outcome ? { gas_wei: outcome.gasWei.toString() } : {}),
    })
    .where("id", "=", d.id)
    .where("state", "=", "signed")
    .executeTakeFirst();
  if (result.numUpdatedRows !== 1n) return false;
  if ("gasWei" in outcome && outcome.nativeCurrency !== null && outcome.gasWei > 0n) {
    const posted = await postMovement(
      tx,
      movement({
        cause: "factory_deployment",
        causeId: d.id,
        kind: "gas",
        memo: `gas of the forwarder factory's deployment (${d.network})`,
        postings: transfer(
          SYSTEM_ACCOUNTS.operatorNetworkFees,
          SYSTEM_ACCOUNTS.chainGas,
          outcome.nativeCurrency,
          outcome.gasWei,
        ),
      }),
      now,
    );
    assert(posted.ok || posted.error === "already_posted", "a deployment's gas is posted once");
  }
  return true;
}

/** The hash of the mined deployment of `factory` on `network`, if this service sent one (the answer of a later call). */
export async function minedDeploymentHash(tx: Tx, network: string, factory: string): Promise<string | null> {
  const row = await tx.db
    .selectFrom("factory_deployments")
    .select("hash")
    .where("network", "=", network)
    .where("factory", "=", factory.toLowerCase())
    .where("state", "=", "mined")
    .orderBy("created_at", "desc")
    .limit(1)
    .executeTakeFirst();
  return row?.hash ?? null;
}
