// The Chainlink adapter of FeedReader: decimals() and latestRoundData() of an AggregatorV3Interface feed through a network's node (viem), bounded in time.
import { ContractFunctionRevertedError, createPublicClient, http, type PublicClient } from "viem";
import { chainErrorOf } from "../chain/rpc.ts";
import type { FeedReadError, FeedReader, FeedRound } from "../domain/rates.ts";
import { err, ok, type Result } from "../domain/result.ts";

const AGGREGATOR_V3_ABI = [
  {
    type: "function",
    name: "decimals",
    stateMutability: "view",
    inputs: [],
    outputs: [{ name: "", type: "uint8" }],
  },
  {
    type: "function",
    name: "latestRoundData",
    stateMutability: "view",
    inputs: [],
    outputs: [
      { name: "roundId", type: "uint80" },
      { name: "answer", type: "int256" },
      { name: "startedAt", type: "uint256" },
      { name: "updatedAt", type: "uint256" },
      { name: "answeredInRound", type: "uint80" },
    ],
  },
] as const;

/** A call that reverted, or a contract that is not there (no code answers empty data). */
function reverted(error: unknown): boolean {
  for (let cursor: unknown = error, depth = 0; depth < 6 && cursor instanceof Error; depth++) {
    if (cursor instanceof ContractFunctionRevertedError) return true;
    if (cursor.name === "ContractFunctionZeroDataError" || cursor.name === "CallExecutionError") return true;
    cursor = (cursor as { cause?: unknown }).cause;
  }
  return false;
}

/** Reads feeds through the node at `rpcUrl`; each call is bounded by `timeoutMs`, and never retried here. */
export function chainlinkFeedReader(rpcUrl: string, timeoutMs: number): FeedReader {
  const client: PublicClient = createPublicClient({ transport: http(rpcUrl, { timeout: timeoutMs, retryCount: 0 }) });
  return {
    async read(feed: string): Promise<Result<FeedRound, FeedReadError>> {
      const address = feed as `0x${string}`;
      try {
        const [decimals, round] = await Promise.all([
          client.readContract({ address, abi: AGGREGATOR_V3_ABI, functionName: "decimals" }),
          client.readContract({ address, abi: AGGREGATOR_V3_ABI, functionName: "latestRoundData" }),
        ]);
        return ok({ decimals: Number(decimals), answer: round[1], updatedAt: round[3] });
      } catch (error) {
        const { error: code, detail } = chainErrorOf(error);
        if (code === "node_error" && reverted(error)) return err("feed_reverted", detail);
        return err(code, detail);
      }
    },
  };
}
