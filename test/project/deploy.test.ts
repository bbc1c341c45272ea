// The deployment files agree with the service: alert rules name metrics it exposes, and the systemd unit and compose file start it as documented.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { serviceOpenApiDocument } from "../../scripts/sdkTypes.ts";
import { RateService } from "../../src/app/rates.ts";
import { registerSignerGauge } from "../../src/chain/signers.ts";
import { loadConfig } from "../../src/config.ts";
import {
  registerChainGauges,
  registerGasGauges,
  registerScreeningGauges,
  registerStoreGauges,
  ServiceMetrics,
} from "../../src/metrics.ts";
import type { Store } from "../../src/store/store.ts";

const scripts = JSON.parse(readFileSync("package.json", "utf8")).scripts as Record<string, string>;

/**
 * The metric names the service registers, with the histogram's series: read from a registry the
 * service's own registrations fill (nothing is scraped, so no store is read).
 */
function exposedMetrics(): Set<string> {
  const metrics = new ServiceMetrics({ defaultMetrics: false });
  const store = { poolUse: () => ({ total: 0, idle: 0, waiting: 0 }) } as unknown as Store;
  registerStoreGauges(metrics, store);
  registerChainGauges(metrics, store);
  registerGasGauges(metrics, async () => []);
  // Both sources configured: a part's gauges exist only when it is (an unconfigured one has none).
  const configured = { status: () => ({}), refresh: async () => {} } as never;
  registerScreeningGauges(metrics, store, { list: configured, provider: configured });
  // The remote signers' series exist with a remote signer only.
  registerSignerGauge(metrics, { states: () => new Map(), probeDown: async () => {} });
  // The rate feeds' series are the rate service's own.
  new RateService(store, {} as never, metrics, {} as never);
  const names = metrics.registry.getMetricsAsArray().map((m) => m.name);
  expect(names).toContain("payments_scanner_lag_blocks");
  const series = names.flatMap((name) => [name, `${name}_count`, `${name}_sum`, `${name}_bucket`]);
  return new Set(series);
}

describe("deployment files", () => {
  it("alert only on metrics the service exposes, covering callbacks, payouts, unmined transactions and scanner lag", () => {
    const rules = readFileSync("docs/deploy/prometheus-alerts.yml", "utf8");
    const used = new Set([...rules.matchAll(/\b(payments_[a-z_]+)/g)].map((m) => m[1]!));
    const exposed = exposedMetrics();
    expect([...used].filter((name) => !exposed.has(name))).toEqual([]);
    for (const needed of [
      "payments_callback_queue_depth",
      "payments_payouts",
      "payments_payout_transactions_in_flight",
      "payments_scanner_lag_blocks",
      "payments_store_up",
      "payments_flush_failed_deposits",
      "payments_hot_wallet_nonce_gaps",
      "payments_chain_stray_payments",
      "payments_rate_feed_age_seconds",
      "payments_hot_wallet_gas_payouts_covered",
      "payments_hot_wallet_gas_flushes_covered",
      "payments_signer_up",
    ]) {
      expect(used.has(needed), needed).toBe(true);
    }
    const alerts = [...rules.matchAll(/- alert: (\S+)\n\s+expr: (.+)\n\s+for: (\S+)/g)];
    expect(alerts.length).toBe((rules.match(/- alert:/g) ?? []).length);
  });

  it("start the service as start:production does, without npm or a build", () => {
    const unit = readFileSync("docs/deploy/payments.service", "utf8");
    const execStart = /^ExecStart=\/usr\/bin\/node (.+)$/m.exec(unit)?.[1];
    expect(`node ${execStart}`).toBe(scripts["start:production"]);
    expect(unit).toMatch(/^User=payments$/m);
    const compose = readFileSync("docker-compose.yml", "utf8");
    expect(compose).toMatch(/image: postgres:15/);
    expect(compose).toMatch(/DATABASE_URL: postgres:\/\/payments:/);
    expect(compose).toMatch(/DATABASE_POOL_SIZE/);
  });

  it("documents every setting of src/config.ts in the README's table", () => {
    const names = new Set(
      [...readFileSync("src/config.ts", "utf8").matchAll(/env(?:\.|, ")([A-Z][A-Z0-9_]+(?:<[A-Z]+>)?)/g)].map(
        (m) => m[1]!,
      ),
    );
    expect(names.size).toBeGreaterThan(20);
    const readme = readFileSync("README.md", "utf8");
    const table = readme.slice(readme.indexOf("## Configuration"));
    expect([...names].filter((name) => !table.includes(`| \`${name}\``))).toEqual([]);
  });

  it("reads the PostgreSQL pool size, bounded", () => {
    const base = { DATABASE_URL: "sqlite:./data/x.db" };
    expect(loadConfig(base).databasePoolSize).toBe(10);
    expect(loadConfig({ ...base, DATABASE_POOL_SIZE: "40" }).databasePoolSize).toBe(40);
    expect(() => loadConfig({ ...base, DATABASE_POOL_SIZE: "0" })).toThrow("DATABASE_POOL_SIZE");
  });
});

describe("alert annotations", () => {
  it("name only operator routes that exist", async () => {
    const rules = readFileSync("docs/deploy/prometheus-alerts.yml", "utf8");
    const named = [...rules.matchAll(/\b(GET|POST|PUT|PATCH|DELETE) (\/admin\/v1\/[^\s,)"]+)/g)];
    expect(named.length).toBeGreaterThan(3);
    const document = (await serviceOpenApiDocument()) as { paths: Record<string, Record<string, unknown>> };
    const shape = (path: string) => path.replace(/\{[^}]+\}/g, "{}");
    const served = new Set(
      Object.entries(document.paths).flatMap(([path, item]) => Object.keys(item).map((m) => `${m} ${shape(path)}`)),
    );
    const missing = named
      .map(([, method, path]) => `${method!.toLowerCase()} ${shape(path!)}`)
      .filter((r) => !served.has(r));
    expect(missing).toEqual([]);
  });
});

describe("the operator docs agree with the deployment (issue 50, point 8)", () => {
  const readme = readFileSync("README.md", "utf8");
  const section = (text: string, heading: string) => text.slice(text.indexOf(heading)).split(/\n## /)[0] ?? "";

  it("copy the CLI with a release, bind the production example to a private address, and give one pool formula", () => {
    const production = section(readme, "## Production");
    for (const path of ["packages/cli/package.json", "packages/cli/bin/", "packages/cli/dist/", "packages/sdk/dist/"]) {
      expect(production, path).toContain(`\`${path}\``);
    }
    const host = /\bHOST=(\S+)/.exec(production)?.[1] ?? "";
    expect(host).toMatch(/^(10\.|192\.168\.|172\.(1[6-9]|2\d|3[01])\.|127\.)/);
    const guide = readFileSync("docs/operator-guide.md", "utf8");
    for (const text of [section(readme, "## PostgreSQL"), guide]) expect(text).toMatch(/× \([^)]*\+ 1\)/);
    expect(`${readme}\n${guide}`).not.toMatch(/× `?DATABASE_POOL_SIZE`?(?! \+)/);
  });

  it("say where live settings go and that a remote signer replaces the mnemonic, with a local signer to try", () => {
    const compose = readFileSync("docker-compose.yml", "utf8");
    for (const name of ["SERVICE_MODE", "WALLET_MNEMONIC", "SIGNER_URL", "SCREENING_LIST"])
      expect(compose).toContain(name);
    for (const doc of ["docs/evm.md", "docs/evm-payouts.md"]) {
      const text = readFileSync(doc, "utf8");
      expect(text, doc).toMatch(/SIGNER_URL/);
      expect(text, doc).toContain("(signer.md)");
    }
    const signer = readFileSync("docs/signer.md", "utf8");
    expect(signer).toMatch(/npx anvil --port \d+ --chain-id \d+/);
    expect(signer).toMatch(/SERVICE_MODE=live DATABASE_URL=\S+ SIGNER_URL=http:\/\/127\.0\.0\.1:\d+/);
  });
});
