// The forwarder factory's deployment in the store (product §24, migration 035): one in flight per network, its nonce counted as used (never "filled"), and the factory recorded once.
import { describe, expect, it } from "vitest";
import {
  insertDeployment,
  pendingDeployment,
  recordedFactories,
  recordFactoryDeployed,
  settleDeployment,
} from "../../src/store/factoryDeployments.ts";
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

function signed(name: string, nonce: number, hash: string) {
  return server.ctx.store.transaction((tx) =>
    insertDeployment(tx, { network: name, factory: FACTORY, fromAddress: HOT, nonce, hash, raw: "0x01" }, nowIso()),
  );
}

describe("factory deployments", () => {
  it("hold their nonce while signed, mined or failed, and release it once replaced", async () => {
    await network("fdnonces");
    const deployment = await signed("fdnonces", 3, "0xaa");
    const used = () => server.ctx.store.transaction((tx) => usedNonces(tx, "fdnonces", HOT, 0, 10));
    expect([...(await used()).nonces]).toEqual([3]);
    // Another hot wallet's nonces are its own.
    const other = await server.ctx.store.transaction((tx) => usedNonces(tx, "fdnonces", FACTORY, 0, 10));
    expect([...other.nonces]).toEqual([]);
    expect(
      await server.ctx.store.transaction((tx) => settleDeployment(tx, deployment, { state: "replaced" }, nowIso())),
    ).toBe(true);
    expect([...(await used()).nonces]).toEqual([]);
    // Settled once: a second outcome changes nothing.
    const again = await server.ctx.store.transaction((tx) =>
      settleDeployment(tx, deployment, { state: "mined", gasWei: 1n, nativeCurrency: null }, nowIso()),
    );
    expect(again).toBe(false);
  });

  it("keeps one deployment in flight per network", async () => {
    await network("fdone");
    await signed("fdone", 0, "0xbb");
    await expect(signed("fdone", 1, "0xcc")).rejects.toThrow();
    expect((await pendingDeployment(server.ctx.store, "fdone"))?.hash).toBe("0xbb");
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
