// Compiles Solidity with solc from npm (offline, deterministic settings): the forwarder contracts' build and the tests' fixture tokens.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

const require = createRequire(import.meta.url);
const ROOT = join(import.meta.dirname, "..");

/**
 * The settings every deployed contract is built with. They decide the bytecode, and the factory's
 * bytecode decides every deposit address: changing any of them moves all future addresses.
 * - evmVersion paris: no PUSH0 or MCOPY, so the same code runs on every EVM network in use.
 * - no CBOR metadata: a comment or a file path does not change the bytecode, only the code does.
 */
export const SOLC_SETTINGS = {
  optimizer: { enabled: true, runs: 200 },
  evmVersion: "paris",
  metadata: { appendCBOR: false, bytecodeHash: "none" },
  outputSelection: { "*": { "*": ["abi", "evm.bytecode.object", "evm.deployedBytecode.object"] } },
} as const;

export interface SolidityOutput {
  abi: unknown[];
  bytecode: `0x${string}`;
  deployedBytecode: `0x${string}`;
}

/** The solc version that builds the artifacts (the npm package's). */
export function solcVersion(): string {
  return (require("solc") as { version(): string }).version();
}

/** Resolves `@openzeppelin/...` imports from node_modules and relative ones from the repository. */
function findImport(path: string): { contents: string } | { error: string } {
  try {
    const file = path.startsWith("@") ? require.resolve(path) : join(ROOT, path);
    return { contents: readFileSync(file, "utf8") };
  } catch {
    return { error: `not found: ${path}` };
  }
}

/** Compiles the given files (paths relative to the repository) and answers each contract by name. */
export function compileSolidity(files: string[]): Map<string, SolidityOutput> {
  const solc = require("solc") as { compile(input: string, callbacks: unknown): string };
  const sources = Object.fromEntries(files.map((f) => [f, { content: readFileSync(join(ROOT, f), "utf8") }]));
  const input = { language: "Solidity", sources, settings: SOLC_SETTINGS };
  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImport })) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts?: Record<
      string,
      Record<string, { abi: unknown[]; evm: { bytecode: { object: string }; deployedBytecode: { object: string } } }>
    >;
  };
  const errors = (output.errors ?? []).filter((e) => e.severity === "error");
  if (errors.length > 0) throw new Error(errors.map((e) => e.formattedMessage).join("\n"));
  const made = new Map<string, SolidityOutput>();
  for (const file of Object.values(output.contracts ?? {})) {
    for (const [name, c] of Object.entries(file)) {
      made.set(name, {
        abi: c.abi,
        bytecode: `0x${c.evm.bytecode.object}`,
        deployedBytecode: `0x${c.evm.deployedBytecode.object}`,
      });
    }
  }
  return made;
}
