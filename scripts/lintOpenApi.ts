// Lints the OpenAPI document a running service serves at /openapi.json with Redocly's recommended rules (redocly.yaml).
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

export interface LintProblem {
  ruleId: string;
  severity: string;
  message: string;
  pointer: string;
}

/** Bound of one lint run: Redocly reads a document of some 17 000 lines in seconds, even on a loaded machine. */
const LINT_TIMEOUT_MS = 300_000;

/** The errors and warnings `redocly lint` finds in the document served at `baseUrl` (none when it is clean). */
export async function lintServedDocument(baseUrl: string): Promise<LintProblem[]> {
  const response = await fetch(`${baseUrl}/openapi.json`);
  if (!response.ok) throw new Error(`GET /openapi.json answered ${response.status}`);
  const dir = mkdtempSync(join(tmpdir(), "payments-openapi-lint-"));
  try {
    const file = join(dir, "openapi.json");
    writeFileSync(file, await response.text());
    const { stdout } = await promisify(execFile)(
      "npx",
      ["--no-install", "redocly", "lint", file, "--config", "redocly.yaml", "--format", "json"],
      { timeout: LINT_TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024 },
    ).catch((error: { stdout?: string; message: string }) => {
      // Redocly exits 1 when it finds errors; its report is still on stdout.
      if (typeof error.stdout === "string" && error.stdout.includes('"problems"')) return { stdout: error.stdout };
      throw error;
    });
    const report = JSON.parse(stdout.slice(stdout.indexOf("{"))) as {
      problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[];
    };
    return report.problems.map((p) => ({
      ruleId: p.ruleId,
      severity: p.severity,
      message: p.message,
      pointer: p.location[0]?.pointer ?? "",
    }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
