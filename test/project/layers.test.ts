// The layer rules of docs/architecture.md are biome.json's: an import the wrong way fails `npm run lint`, and the real tree has none.
import { execFile } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const run = promisify(execFile);
const root = resolve(import.meta.dirname, "../..");
const biome = join(root, "node_modules/.bin/biome");
const RULE = "lint/style/noRestrictedImports";

const SURFACES = ["public", "admin", "sandbox", "pay", "dashboard", "webhooks"] as const;

/** A file in a layer (path under src/) importing one specifier (the name `a`, or `name`), and whether the rules must refuse it. */
interface Probe {
  file: string;
  specifier: string;
  refused: boolean;
  name?: string;
}

const probe = (file: string, specifier: string, refused: boolean, name?: string): Probe => ({
  file,
  specifier,
  refused,
  ...(name === undefined ? {} : { name }),
});

const PROBES: Probe[] = [
  // The domain imports only the domain.
  probe("domain/p.ts", "../store/store.ts", true),
  probe("domain/p.ts", "../app/context.ts", true),
  probe("domain/p.ts", "../config.ts", true),
  probe("domain/p.ts", "./money.ts", false),
  // The store: the domain and the store only.
  ...["../app/context.ts", "../http/app.ts", "../workers/loop.ts", "../chain/rpc.ts"].map((s) =>
    probe("store/p.ts", s, true),
  ),
  ...[
    "../cardProvider/stripe.ts",
    "../rates/chainlink.ts",
    "../screening/chainalysis.ts",
    "../config.ts",
    "../metrics.ts",
  ].map((s) => probe("store/p.ts", s, true)),
  probe("store/migrations/p.ts", "../../app/context.ts", true),
  probe("store/p.ts", "../domain/money.ts", false),
  probe("store/p.ts", "./store.ts", false),
  // The store keeps queries and transactions: settlement's, screening's and refunds' decisions are
  // the use cases' (src/app), and the store imports none of the domain functions that make them.
  ...["statusAfterPayments", "statusAfterAml", "statusAtExpiry", "amlStatusAfter", "screenedPayment"].map((name) =>
    probe("store/p.ts", "../domain/settlement.ts", true, name),
  ),
  ...["completionMovement", "latePaymentMovement", "blockedPaymentMovement"].map((name) =>
    probe("store/p.ts", "../domain/settlement.ts", true, name),
  ),
  probe("store/p.ts", "../domain/refund.ts", true, "planRefund"),
  probe("store/p.ts", "../domain/partialRefund.ts", true, "planPartialRefund"),
  probe("store/p.ts", "../domain/screening.ts", true),
  probe("store/p.ts", "../domain/screening.ts", true, "combineVerdicts"),
  probe("store/migrations/p.ts", "../../domain/settlement.ts", true, "statusAfterPayments"),
  // What the store's queries need of the same modules stays open to it.
  probe("store/p.ts", "../domain/settlement.ts", false, "summarizePayments"),
  probe("store/p.ts", "../domain/refund.ts", false, "statusAfterRefund"),
  probe("app/p.ts", "../domain/settlement.ts", false, "statusAfterPayments"),
  probe("app/p.ts", "../domain/refund.ts", false, "planRefund"),
  // Use cases: never HTTP, workers, chain code or adapters.
  ...[
    "../http/app.ts",
    "../workers/loop.ts",
    "../chain/rpc.ts",
    "../cardProvider/stripe.ts",
    "../rates/chainlink.ts",
    "../screening/chainalysis.ts",
    "../screening/listFile.ts",
    // A use case refuses by a value (src/app/refusal.ts), never by the HTTP Problem.
    "../http/problem.ts",
    "../http/errorCodes.ts",
  ].map((s) => probe("app/p.ts", s, true)),
  probe("app/nested/p.ts", "../../http/problem.ts", true),
  probe("app/p.ts", "../store/store.ts", false),
  probe("app/p.ts", "./context.ts", false),
  // Workers, chain code and adapters: never HTTP.
  ...["workers", "chain", "cardProvider", "rates", "screening"].map((layer) =>
    probe(`${layer}/p.ts`, "../http/app.ts", true),
  ),
  probe("workers/p.ts", "../app/context.ts", false),
  // Chain code takes narrow ports from its caller: never a use case or the ServiceContext.
  ...["../app/context.ts", "../app/screening.ts", "../app/recordChainPayment.ts"].map((s) =>
    probe("chain/p.ts", s, true),
  ),
  probe("chain/p.ts", "../store/store.ts", false),
  probe("chain/p.ts", "../domain/finality.ts", false),
  // An HTTP surface never imports another; the shared http modules and the use cases are open to all.
  ...SURFACES.flatMap((from) =>
    SURFACES.filter((to) => to !== from).map((to) => probe(`http/${from}/p.ts`, `../${to}/index.ts`, true)),
  ),
  ...SURFACES.map((from) => probe(`http/${from}/p.ts`, "../schemas.ts", false)),
  ...SURFACES.map((from) => probe(`http/${from}/p.ts`, "../../app/context.ts", false)),
  // Ledger postings come from the use cases and the store: no HTTP module imports the ledger's posting module.
  probe("http/p.ts", "../store/ledger.ts", true),
  ...SURFACES.map((from) => probe(`http/${from}/p.ts`, "../../store/ledger.ts", true)),
  probe("http/admin/nested/p.ts", "../../../store/ledger.ts", true),
  // Reads stay open: the ledger's lines (store) and the balances (use case).
  probe("http/p.ts", "../store/ledgerLines.ts", false),
  ...SURFACES.map((from) => probe(`http/${from}/p.ts`, "../../store/ledgerLines.ts", false)),
  probe("http/admin/p.ts", "../../app/balances.ts", false),
  probe("app/p.ts", "../store/ledger.ts", false),
  // A payout's settlement posts (a failed one's credit-back): no HTTP module settles one; its reads stay open.
  probe("http/p.ts", "../store/payouts.ts", true, "settlePayout"),
  ...SURFACES.map((from) => probe(`http/${from}/p.ts`, "../../store/payouts.ts", true, "settlePayout")),
  probe("http/admin/nested/p.ts", "../../../store/payouts.ts", true, "settlePayout"),
  probe("http/p.ts", "../store/payouts.ts", false, "findPayout"),
  ...SURFACES.map((from) => probe(`http/${from}/p.ts`, "../../store/payouts.ts", false, "findPayout")),
  probe("app/p.ts", "../store/payouts.ts", false, "settlePayout"),
];

/** The files biome reports the layer rule in (its GitHub reporter: one `::error` line per diagnostic). */
async function refusedFiles(cwd: string, target: string): Promise<Set<string>> {
  const output = await run(biome, ["lint", `--only=style/noRestrictedImports`, "--reporter=github", target], {
    cwd,
    maxBuffer: 16 * 1024 * 1024,
  }).then(
    (done) => done.stdout,
    (failed: { stdout?: string }) => failed.stdout ?? "",
  );
  const files = new Set<string>();
  for (const line of output.split("\n")) {
    const match = /^::error title=([^,]+),file=([^,]+),/.exec(line);
    if (match && match[1] === RULE) files.add(relative(cwd, match[2]!));
  }
  return files;
}

describe("layer rules (biome.json noRestrictedImports)", () => {
  it("refuse every import the wrong way, in each layer and surface, and allow the right ones", async () => {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), "layers-")));
    try {
      cpSync(join(root, "biome.json"), join(dir, "biome.json"));
      // One file per probe, each with a static and a dynamic import of its specifier.
      const files = PROBES.map((p, i) => {
        const file = `src/${p.file.replace(/p\.ts$/, `p${i}.ts`)}`;
        mkdirSync(dirname(join(dir, file)), { recursive: true });
        const name = p.name ?? "a";
        writeFileSync(
          join(dir, file),
          `import { ${name} } from "${p.specifier}";\nexport const b = [${name}, import("${p.specifier}")];\n`,
        );
        return { ...p, path: file };
      });
      const refused = await refusedFiles(dir, "src");
      const wrong = files.filter((f) => refused.has(f.path) !== f.refused);
      expect(
        wrong.map((f) => `${f.path} importing ${f.specifier}: expected ${f.refused ? "refused" : "allowed"}`),
      ).toEqual([]);
      // The probe saw refusals at all (a misread report would otherwise pass every allowed probe).
      expect(refused.size).toBe(files.filter((f) => f.refused).length);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it("find no import the wrong way in the real tree", async () => {
    expect([...(await refusedFiles(root, "src"))]).toEqual([]);
  }, 60_000);
});
