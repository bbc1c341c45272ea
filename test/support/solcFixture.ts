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

/**
 * Fixtures built on OpenZeppelin 5.7 need cancun: its EIP712 and SignatureChecker copy memory with
 * MCOPY. The others stay on shanghai, so their bytecode is what it always was.
 */
const EVM_VERSIONS: Readonly<Record<string, string>> = { AuthorizationToken: "cancun" };

const compiled = new Map<string, CompiledContract>();

/** Resolves `@openzeppelin/...` imports (and their own relative imports, which solc names the same way) from node_modules. */
function findImport(path: string): { contents: string } | { error: string } {
  if (!path.startsWith("@openzeppelin/")) return { error: `a fixture imports only @openzeppelin/...: ${path}` };
  try {
    return { contents: readFileSync(require.resolve(path), "utf8") };
  } catch {
    return { error: `not found: ${path}` };
  }
}

/** Compiles test/support/fixtures/<name>.sol (contract <name>) with solc from npm (offline, ~1 s), once per process. */
export function compileFixture(name: string): CompiledContract {
  const cached = compiled.get(name);
  if (cached) return cached;
  const solc = require("solc") as { compile(input: string, callbacks?: unknown): string };
  const source = readFileSync(fileURLToPath(new URL(`./fixtures/${name}.sol`, import.meta.url)), "utf8");
  const input = {
    language: "Solidity",
    sources: { [`${name}.sol`]: { content: source } },
    settings: {
      optimizer: { enabled: true, runs: 200 },
      evmVersion: EVM_VERSIONS[name] ?? "shanghai",
      outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImport })) as {
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
