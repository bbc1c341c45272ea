// The hot wallet's nonce allocator (product §12): one count per network and hot wallet, never below the chain's.
import { beforeAll, describe, expect, it } from "vitest";
import { putNetwork, takeHotNonce } from "../../src/store/networks.ts";
import { nowIso } from "../../src/store/store.ts";
import { useTestServer } from "../support/fixture.ts";

const A = "0x00000000000000000000000000000000000000Aa";
const B = "0x00000000000000000000000000000000000000bB";

const server = useTestServer();
beforeAll(async () => {
  await server.ctx.store.transaction((tx) =>
    putNetwork(tx, server.ctx.box, "nonces", { chainId: 31337, rpcUrl: "http://127.0.0.1:1" }, nowIso()),
  );
});

const take = (address: string, chainNonce: number) =>
  server.ctx.store.transaction((tx) => takeHotNonce(tx, "nonces", address, chainNonce));

describe("takeHotNonce", () => {
  it("counts on from its own count or the chain's, whichever is higher, and starts a new hot wallet from its chain nonce", async () => {
    expect(await take(A, 5)).toBe(5);
    expect(await take(A, 5)).toBe(6); // the node has not seen 5 yet: the count goes on
    expect(await take(A, 10)).toBe(10); // sent from elsewhere: skipped
    expect(await take(A.toLowerCase(), 0)).toBe(11); // the same wallet, whatever the case
    // Another WALLET_MNEMONIC: its own nonces, not the previous wallet's count (a gap it could never fill).
    expect(await take(B, 2)).toBe(2);
    expect(await take(B, 2)).toBe(3);
  });
});
