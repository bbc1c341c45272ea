// Operator configuration of live money (product §12): networks checked against their node, RPC URLs sealed and masked, catalog entries, the wallet at start-up.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.ts";
import { explorerUrls } from "../../src/store/networks.ts";
import { type LocalChain, SERVICE_MNEMONIC, startLocalChain, type TestToken } from "../support/chain.ts";
import { usdtEntry } from "../support/live.ts";
import { admin, createMerchant, expectProblem, startTestServer, type TestServer } from "../support/server.ts";

let chain: LocalChain;
let token: TestToken;
let server: TestServer;

beforeAll(async () => {
  chain = await startLocalChain();
  token = await chain.deployToken();
  server = await startTestServer({ env: { SERVICE_MODE: "live", WALLET_MNEMONIC: SERVICE_MNEMONIC } });
}, 60_000);

afterAll(async () => {
  await server?.close();
  await chain?.close();
});

describe("WALLET_MNEMONIC", () => {
  it("refuses an invalid phrase at start-up without repeating it, and never shows a valid one", () => {
    const base = { DATABASE_URL: "sqlite::memory:", SECRET_ENCRYPTION_KEY: "a".repeat(64) };
    const bad = "legal winner thank year wave sausage worth useful legal winner thank thank";
    expect(() => loadConfig({ ...base, WALLET_MNEMONIC: bad })).toThrow(ConfigError);
    try {
      loadConfig({ ...base, WALLET_MNEMONIC: bad });
    } catch (error) {
      expect((error as Error).message).not.toContain("sausage");
    }
    const config = loadConfig({ ...base, WALLET_MNEMONIC: SERVICE_MNEMONIC });
    expect(JSON.stringify(config)).not.toContain("sausage");
    expect(String(config.walletMnemonic)).toBe("[redacted]");
  });
});

describe("PUT /admin/v1/networks/{network}", () => {
  it("configures a network whose node answers with the chain id, and answers the RPC URL masked", async () => {
    const answer = await admin(server, "PUT", "/networks/ethereum", {
      chainId: chain.chainId,
      rpcUrl: `${chain.url}/secret-key-123`,
      confirmations: 3,
      explorerUrl: "https://explorer.test/tx/{tx}",
    });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ network: "ethereum", chainId: chain.chainId, confirmations: 3 });
    expect(answer.text).not.toContain("secret-key-123");
    const sealed = await server.ctx.store.db.selectFrom("networks").select("rpc_url_sealed").executeTakeFirstOrThrow();
    expect(sealed.rpc_url_sealed).not.toContain("secret-key-123");
    expect(await explorerUrls(server.ctx.store)).toEqual(new Map([["ethereum", "https://explorer.test/tx/{tx}"]]));
  });

  it("refuses a node on another chain, an unreachable node, bad names and bad values", async () => {
    expectProblem(
      await admin(server, "PUT", "/networks/ethereum", { chainId: 1, rpcUrl: chain.url }),
      400,
      "chain_id_mismatch",
    );
    expectProblem(
      await admin(server, "PUT", "/networks/other", { chainId: 1, rpcUrl: "http://127.0.0.1:9/" }),
      400,
      "network_unreachable",
    );
    expectProblem(
      await admin(server, "PUT", "/networks/Card", { chainId: 1, rpcUrl: chain.url }),
      400,
      "invalid_network",
    );
    expectProblem(await admin(server, "PUT", "/networks/x", { chainId: 1, rpcUrl: "ftp://a" }), 400, "invalid_rpc_url");
    expectProblem(
      await admin(server, "PUT", "/networks/x", { chainId: 1, rpcUrl: chain.url, confirmations: 0 }),
      400,
      "validation_failed",
    );
    expectProblem(
      await admin(server, "PUT", "/networks/x", { chainId: 1, rpcUrl: chain.url, explorerUrl: "javascript:alert(1)" }),
      400,
      "invalid_explorer_url",
    );
  });

  it("GET /admin/v1/networks shows the head, the hot wallet and its balances, and the node's errors", async () => {
    const listed = await admin(server, "GET", "/networks");
    expect(listed.status).toBe(200);
    const [network] = listed.body;
    expect(network.network).toBe("ethereum");
    expect(BigInt(network.headBlock)).toBeGreaterThan(0n);
    expect(network.hotWalletAddress).toBe(server.ctx.wallet?.hotAddress);
    expect(network.hotWalletBalances.find((b: { currency: string }) => b.currency === "ETH")).toEqual({
      currency: "ETH",
      balance: "0",
    });
    expect(listed.text).not.toContain("secret-key-123");
    chain.setFault("wrong_chain_id");
    try {
      const lying = await admin(server, "GET", "/networks");
      expect(lying.body[0].nodeError).toMatch(/wrong_chain_id/);
      expect(lying.body[0].headBlock).toBeNull();
    } finally {
      chain.setFault("none");
    }
  });
});

describe("PUT /admin/v1/currencies/{ticker}", () => {
  const entry = (overrides: Record<string, unknown> = {}) => usdtEntry(token, overrides);

  it("points a currency at a test token, and refuses a bad contract address", async () => {
    const answer = await admin(server, "PUT", "/currencies/USDT", entry());
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ ticker: "USDT", contractAddress: token.address, decimals: 6 });
    // One letter's case flipped: the EIP-55 checksum no longer matches.
    const at = token.address.slice(2).search(/[a-fA-F]/) + 2;
    const letter = token.address.charAt(at);
    const typo = `${token.address.slice(0, at)}${letter === letter.toLowerCase() ? letter.toUpperCase() : letter.toLowerCase()}${token.address.slice(at + 1)}`;
    expectProblem(
      await admin(server, "PUT", "/currencies/USDT", entry({ contractAddress: typo })),
      400,
      "invalid_address",
    );
    expectProblem(
      await admin(server, "PUT", "/currencies/USDT", entry({ contractAddress: "0x12" })),
      400,
      "invalid_address",
    );
    expectProblem(
      await admin(server, "PUT", "/currencies/TST", entry({ internalTicker: "TST", withdrawalMin: "0.0000001" })),
      400,
      "invalid_currency",
    );
  });

  it("creates a new entry, and changes its decimals only until money moved in it", async () => {
    expect((await admin(server, "PUT", "/currencies/TST", entry({ internalTicker: "TST", decimals: 6 }))).status).toBe(
      200,
    );
    expect((await admin(server, "PUT", "/currencies/TST", entry({ internalTicker: "TST", decimals: 8 }))).status).toBe(
      200,
    );
    const listed = await admin(server, "GET", "/currencies");
    expect(listed.body.find((c: { ticker: string }) => c.ticker === "TST")).toMatchObject({ decimals: 8 });
    // Money moved in TST (a ledger entry): its decimals are fixed from then on.
    await server.ctx.store.transaction(async (tx) => {
      await tx.db
        .insertInto("ledger_movements")
        .values({ id: "m", cause: "adjustment", cause_id: "m", kind: "adjustment", memo: null, created_at: "x" })
        .execute();
      await tx.db
        .insertInto("ledger_entries")
        .values({ movement_id: "m", account: "operator:adjustments", currency: "TST", amount: "0" })
        .execute();
    });
    expectProblem(
      await admin(server, "PUT", "/currencies/TST", entry({ internalTicker: "TST", decimals: 6 })),
      409,
      "decimals_locked",
    );
    expect(
      (await admin(server, "PUT", "/currencies/TST", entry({ internalTicker: "TST", decimals: 8, rateUsd: "2" })))
        .status,
    ).toBe(200);
  });
});

describe("withdrawal methods in live mode", () => {
  it("take EVM addresses only, checksum checked", async () => {
    const m = await createMerchant(server);
    const path = `/merchants/${m.id}/withdrawal-methods`;
    expectProblem(await admin(server, "POST", path, { currency: "USDT", address: "0xfuzz" }), 400, "invalid_address");
    const typo = "0x5fbDB2315678afecb367f032d93F642f64180aa3";
    expectProblem(await admin(server, "POST", path, { currency: "ETH", address: typo }), 400, "invalid_address");
    const added = await admin(server, "POST", path, { currency: "USDT", address: chain.accounts[1] });
    expect(added.status).toBe(200);
  });
});
