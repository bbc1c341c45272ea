// Network configuration rules (product §12): names, RPC URLs shown masked, explorer templates.
import { describe, expect, it } from "vitest";
import {
  checkExplorerUrl,
  checkNetworkName,
  checkRpcUrl,
  explorerTxUrl,
  maskRpcUrl,
} from "../../src/domain/networks.ts";

describe("network configuration", () => {
  it("takes lowercase network names, never the fiat rail", () => {
    expect(checkNetworkName("ethereum").ok).toBe(true);
    expect(checkNetworkName("base-sepolia_2").ok).toBe(true);
    for (const bad of ["", "Ethereum", "card", "-x", "a".repeat(33), "eth net"]) {
      expect(checkNetworkName(bad).ok).toBe(false);
    }
  });

  it("shows an RPC URL without anything that may hold a key", () => {
    expect(maskRpcUrl("https://mainnet.infura.io/v3/0123456789abcdef")).toBe("https://mainnet.infura.io/…");
    expect(maskRpcUrl("https://user:secret@node.example:8545")).toBe("https://node.example:8545/…");
    expect(maskRpcUrl("https://node.example/?key=abc")).toBe("https://node.example/…");
    expect(maskRpcUrl("http://127.0.0.1:8545")).toBe("http://127.0.0.1:8545/");
    expect(checkRpcUrl("ws://node.example").ok).toBe(false);
    expect(checkRpcUrl("not a url").ok).toBe(false);
  });

  it("links transactions with an http(s) explorer template", () => {
    expect(checkExplorerUrl("https://etherscan.io/tx/{tx}").ok).toBe(true);
    expect(checkExplorerUrl("javascript:alert(1)").ok).toBe(false);
    expect(explorerTxUrl("https://etherscan.io/tx/{tx}", "0xab")).toBe("https://etherscan.io/tx/0xab");
    expect(explorerTxUrl("https://explorer.test/tx/", "0xab")).toBe("https://explorer.test/tx/0xab");
  });
});
