// The Solidity fixtures of test/support/fixtures compiled with solc from npm (offline), once per process: the local chain's tests and the simulation's networks deploy them.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import type { Abi, Hex } from "viem";

const require = createRequire(import.meta.url);

export interface CompiledContract {
  abi: Abi;
  bytecode: Hex;
}

const compiled = new Map<string, CompiledContract>();

/** Compiles test/support/fixtures/<name>.sol (contract <name>) with solc from npm (offline, ~1 s), once per process. */
export function compileFixture(name: string): CompiledContract {
  const cached = compiled.get(name);
  if (cached) return cached;
  const solc = require("solc") as { compile(input: string): string };
  const source = readFileSync(fileURLToPath(new URL(`./fixtures/${name}.sol`, import.meta.url)), "utf8");
  const input = {
    language: "Solidity",
    sources: { [`${name}.sol`]: { content: source } },
    settings: {
      optimizer: { enabled: true, runs: 200 },
      evmVersion: "shanghai",
      outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>>;
  };
  const errors = (output.errors ?? []).filter((e) => e.severity === "error");
  if (errors.length > 0) throw new Error(errors.map((e) => e.formattedMessage).join("\n"));
  const contract = output.contracts[`${name}.sol`]?.[name];
  if (!contract) throw new Error(`${name} did not compile`);
  const made: CompiledContract = { abi: contract.abi, bytecode: `0x${contract.evm.bytecode.object}` };
  compiled.set(name, made);
  return made;
}
