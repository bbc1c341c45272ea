// The SDK as another project gets it: `npm pack` of packages/sdk installs in a fresh folder and imports, with its types.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const work = mkdtempSync(join(tmpdir(), "payments-sdk-pack-"));
afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("the SDK package", () => {
  it("packs, installs outside the repository and imports", () => {
    // test/support/buildPackages.ts built packages/sdk/dist for this run.
    execFileSync("npm", ["pack", "--pack-destination", work, "--silent"], { cwd: resolve("packages/sdk") });
    const tarball = readdirSync(work).find((name) => name.endsWith(".tgz"));
    expect(tarball).toBeDefined();
    const project = join(work, "shop");
    execFileSync("mkdir", ["-p", project]);
    writeFileSync(
      join(project, "package.json"),
      JSON.stringify({ name: "shop", version: "1.0.0", type: "module", private: true }),
    );
    execFileSync("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", join(work, tarball!)], {
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
