// The configuration's variables are defined once (src/configVariables.ts): config.ts reads no other, and the operator guide's table is exactly what the definitions generate.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { OPERATOR_GUIDE_PATH, withConfigTable } from "../../scripts/configDocs.ts";
import { CONFIG_VARIABLES } from "../../src/configVariables.ts";

/** Every variable name src/config.ts reads: `env.NAME`, `env["NAME"]`, and names passed to a reader. */
function namesReadByConfig(): Set<string> {
  const source = readFileSync("src/config.ts", "utf8");
  const names = new Set<string>();
  for (const pattern of [
    /env\.([A-Z][A-Z0-9_]+)/g,
    /env\[\s*"([A-Z][A-Z0-9_]+)"\s*\]/g,
    // A per-network variable's pattern too (`SIGNER_URL_<NETWORK>`).
    /\(env, "([A-Z][A-Z0-9_]+(?:<[A-Z]+>)?)"/g,
  ]) {
    for (const match of source.matchAll(pattern)) names.add(match[1] as string);
  }
  // Names listed for a check of stray settings (the card provider's keys without CARD_PROVIDER).
  for (const match of source.matchAll(/\["(STRIPE_[A-Z_]+)", /g)) names.add(match[1] as string);
  return names;
}

describe("configuration variables", () => {
  it("defines every variable config.ts reads, and reads every one it defines", () => {
    const defined = CONFIG_VARIABLES.map((v) => v.name);
    expect(new Set(defined).size).toBe(defined.length);
    expect([...namesReadByConfig()].sort()).toEqual([...defined].sort());
  });

  it("is documented in the operator guide exactly as the definitions generate it", () => {
    const guide = readFileSync(OPERATOR_GUIDE_PATH, "utf8");
    expect(guide, "run npm run generate:config-docs").toBe(withConfigTable(guide));
  });
});
