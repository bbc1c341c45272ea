// The hot wallet's outbox in the store (product §26, migration 040): every purpose's transaction holds its nonce until another took it, moves only along the state table, one open first transaction per nonce; and the factory recorded once.
import { describe, expect, it } from "vitest";
import type { HotTxPurpose } from "../../src/domain/hotTransaction.ts";
import { recordedFactories, recordFactoryDeployed } from "../../src/store/factoryDeployments.ts";
import {
  insertHotTransaction,
  moveHotTransaction,
  openHotTransactions,
  replaceOthersAtNonce,
} from "../../src/store/hotTransactions.ts";
import { putNetwork } from "../../src/store/networks.ts";
import { usedNonces } from "../../src/store/nonceFills.ts";
import { nowIso } from "../../src/store/store.ts";
import { useTestServer } from "../support/fixture.ts";

const server = useTestServer();
const HOT = "0x9858EfFD232B4033E47d90003D41EC34EcaEda94";
const FACTORY = "0x00000000000000000000000000000000000000Fa";

async function network(name: string): Promise<void> {
  const put = await server.ctx.store.transaction((tx) =>
    putNetwork(tx, server.ctx.box, name, { chainId: 1, rpcUrl: "http://127.0.0.1:9/" }, nowIso()),
  );
  expect(put.ok).toBe(true);
}

function signed(
  name: string,
  nonce: number,
  hash: string,
  purpose: HotTxPurpose = "deployment",
  replacesId: string | null = null,
) {
  return server.ctx.store.transaction((tx) =>
    insertHotTransaction(
      tx,
      {
        purpose,
        purposeId: FACTORY.toLowerCase(),
        network: name,
        chainId: 1,
        fromAddress: HOT,
        nonce,
        hash,
        raw: "0x01",
        call: { to: FACTORY, value: 0n },
        tokenContract: null,
        tokenAmount: 0n,
        gasLimit: 21_000n,
        fees: { maxFeePerGas: 2n, maxPriorityFeePerGas: 1n },
        replacesId,
      },
      nowIso(),
    ),
  );
}

describe("the hot wallet's outbox", () => {
  it("holds a nonce while a transaction is open, confirmed or reverted, and releases it once replaced", async () => {
    await network("fdnonces");
    const deployment = await signed("fdnonces", 3, "0xaa");
    const used = () => server.ctx.store.transaction((tx) => usedNonces(tx, "fdnonces", HOT, 0, 10));
    expect([...(await used()).nonces]).toEqual([3]);
    // Another hot wallet's nonces are its own.
    const other = await server.ctx.store.transaction((tx) => usedNonces(tx, "fdnonces", FACTORY, 0, 10));
    expect([...other.nonces]).toEqual([]);
    const move = (from: typeof deployment, to: "replaced" | "broadcast") =>
      server.ctx.store.transaction((tx) => moveHotTransaction(tx, from, to, {}, nowIso()));
    expect(await move(deployment, "replaced")).toBe(true);
    expect([...(await used()).nonces]).toEqual([]);
    // Compare-and-set from the state the caller saw: a second move from `signed` changes nothing.
    expect(await move(deployment, "broadcast")).toBe(false);
    // A move the state table does not list is refused before anything is written.
    await expect(move({ ...deployment, state: "replaced" }, "broadcast")).rejects.toThrow(/in the table/);
    expect(await openHotTransactions(server.ctx.store, "fdnonces", 10)).toEqual([]);
  });

  it("keeps one open first transaction per nonce, whatever the purpose", async () => {
    await network("fdone");
    await signed("fdone", 0, "0xbb");
    await expect(signed("fdone", 0, "0xcc", "fill")).rejects.toThrow();
    expect((await openHotTransactions(server.ctx.store, "fdone", 10)).map((t) => t.hash)).toEqual(["0xbb"]);
  });

  // Found by the simulation (a random seed of CI): a follower that settled the nonce's mined
  // transaction moved its replacement to `replaced` by compare-and-set from the state it had read;
  // another process had broadcast the replacement since, so it stayed open, and the next pass took
  // the settled nonce for a foreign transaction's (an error, and the payout's `lost` handler).
  it("replaces every other open transaction at a settled nonce, whatever state another process left it in", async () => {
    await network("fdsettle");
    const first = await signed("fdsettle", 5, "0xd1", "payout");
    const replacement = await signed("fdsettle", 5, "0xd2", "payout", first.id);
    const later = await signed("fdsettle", 6, "0xd3", "payout");
    const at = nowIso();
    // Another process broadcast the replacement after this one read it as signed.
    await server.ctx.store.transaction((tx) => moveHotTransaction(tx, replacement, "broadcast", {}, at));
    const stale = await server.ctx.store.transaction((tx) => moveHotTransaction(tx, replacement, "replaced", {}, at));
    expect(stale).toBe(false);
    await server.ctx.store.transaction((tx) => replaceOthersAtNonce(tx, first, at));
    const states = await server.ctx.store.db
      .selectFrom("hot_transactions")
      .select(["hash", "state"])
      .where("network", "=", "fdsettle")
      .orderBy("hash")
      .execute();
    expect(states).toEqual([
      { hash: "0xd1", state: "signed" },
      { hash: "0xd2", state: "replaced" },
      { hash: "0xd3", state: "signed" },
    ]);
    expect(later.nonce).toBe(6);
  });

  it("records the factory once, lowercase, and a new one replaces it", async () => {
    await network("fdrecord");
    expect((await recordedFactories(server.ctx.store)).get("fdrecord")).toBeNull();
    await server.ctx.store.transaction((tx) =>
      recordFactoryDeployed(tx, "fdrecord", FACTORY, "2026-01-01T00:00:00.000Z"),
    );
    await server.ctx.store.transaction((tx) =>
      recordFactoryDeployed(tx, "fdrecord", FACTORY, "2026-02-01T00:00:00.000Z"),
    );
    const row = () =>
      server.ctx.store.db
        .selectFrom("networks")
        .select(["factory_address", "factory_deployed_at"])
        .where("name", "=", "fdrecord")
        .executeTakeFirstOrThrow();
    expect(await row()).toEqual({
      factory_address: FACTORY.toLowerCase(),
      factory_deployed_at: "2026-01-01T00:00:00.000Z",
    });
    await server.ctx.store.transaction((tx) => recordFactoryDeployed(tx, "fdrecord", HOT, "2026-03-01T00:00:00.000Z"));
    expect(await row()).toEqual({
      factory_address: HOT.toLowerCase(),
      factory_deployed_at: "2026-03-01T00:00:00.000Z",
    });
  });
});
