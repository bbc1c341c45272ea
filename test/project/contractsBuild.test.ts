// The committed forwarder artifacts are exactly what solc builds from contracts/ (they decide every deposit address, so they must not drift).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { buildContractFiles } from "../../scripts/build-contracts.ts";

const ROOT = join(import.meta.dirname, "..", "..");

describe("contracts/build and the generated module", () => {
  it("match a fresh deterministic build (run npm run build:contracts after changing contracts/)", () => {
    const files = buildContractFiles();
    expect([...files.keys()].sort()).toEqual([
      "contracts/build/DepositForwarder.json",
      "contracts/build/DepositForwarderFactory.json",
      "contracts/build/v1/DepositForwarder.json",
      "contracts/build/v1/DepositForwarderFactory.json",
      "src/domain/forwarderContracts.generated.ts",
    ]);
    for (const [path, content] of files) expect(readFileSync(join(ROOT, path), "utf8"), path).toBe(content);
  }, 60_000);

  it("the service never loads solc or the contracts' sources at run time", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
      dependencies: Record<string, string>;
      devDependencies: Record<string, string>;
    };
    expect(pkg.dependencies.solc).toBeUndefined();
    expect(pkg.dependencies["@openzeppelin/contracts"]).toBeUndefined();
    expect(pkg.devDependencies.solc).toBeDefined();
    const generated = readFileSync(join(ROOT, "src/domain/forwarderContracts.generated.ts"), "utf8");
    expect(generated).not.toMatch(/\bimport\b/);
  });
});
