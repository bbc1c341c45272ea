// The SDK and the CLI as another project gets them: `npm pack` from a clean tree (no dist/, as a fresh clone has) builds what it ships; the SDK's tarball installs in a fresh folder and imports, with its types.
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const work = mkdtempSync(join(tmpdir(), "payments-sdk-pack-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/**
 * A fresh clone after `npm ci`: the repository's dependencies, and the workspace links
 * (node_modules/@merchant-payments/*) pointing at this tree's packages, which have no dist/.
 */
const tree = join(work, "clone");
const modules = join(tree, "node_modules");
mkdirSync(join(modules, "@merchant-payments"), { recursive: true });
for (const entry of readdirSync(resolve("node_modules"))) {
  if (entry !== "@merchant-payments") symlinkSync(resolve("node_modules", entry), join(modules, entry));
}
for (const name of ["sdk", "cli"]) {
  symlinkSync(join("..", "..", "packages", name), join(modules, "@merchant-payments", name));
}

/**
 * Copies packages/<name> into the clean tree without dist/ (test/support/buildPackages.ts built the
 * repository's for this run) and packs it there. Answers the tarball's path and the files it holds.
 */
function packClean(name: string): { tarball: string; files: string[] } {
  const copy = join(tree, "packages", name);
  cpSync(resolve("packages", name), copy, {
    recursive: true,
    filter: (source) => !/[\\/](dist|node_modules)$/.test(source),
  });
  expect(existsSync(join(copy, "dist"))).toBe(false);
  const out = join(work, "out");
  mkdirSync(out, { recursive: true });
  const answer = execFileSync("npm", ["pack", "--json", "--pack-destination", out], {
    cwd: copy,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "ignore"],
  });
  // npm prints the prepack build's output before the JSON.
  const [packed] = JSON.parse(answer.slice(answer.indexOf("[")));
  return { tarball: join(out, packed.filename), files: packed.files.map((f: { path: string }) => f.path) };
}

describe("the SDK and CLI packages", () => {
  it("pack what they ship from a clean tree, and the SDK installs outside the repository and imports", () => {
    const sdk = packClean("sdk");
    expect(sdk.files).toEqual(expect.arrayContaining(["dist/index.js", "dist/index.d.ts", "README.md"]));
    expect(sdk.files.some((f) => f.startsWith("src/"))).toBe(false);
    const cli = packClean("cli");
    expect(cli.files).toEqual(expect.arrayContaining(["bin/payments.js", "dist/main.js"]));

    const project = join(work, "shop");
    mkdirSync(project);
    writeFileSync(
      join(project, "package.json"),
      JSON.stringify({ name: "shop", version: "1.0.0", type: "module", private: true }),
    );
    execFileSync("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", sdk.tarball], {
      cwd: project,
      timeout: 600_000,
    });
    const installed = join(project, "node_modules", "@merchant-payments", "sdk");
    expect(existsSync(join(installed, "dist", "index.d.ts"))).toBe(true);
    expect(existsSync(join(installed, "src"))).toBe(false);
    const script = [
      "import { PaymentsClient, verifyCallback } from '@merchant-payments/sdk';",
      "const client = new PaymentsClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'pk_x', secretKey: 's' });",
      "console.log(typeof client.createInvoice, typeof verifyCallback);",
    ].join("\n");
    const output = execFileSync("node", ["--input-type=module", "-e", script], { cwd: project, encoding: "utf8" });
    expect(output.trim()).toBe("function function");
  }, 900_000);
});
