// The built `payments` executable run as a process against the real service: exit codes, tables, --json, secrets kept hidden.
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../../../../test/support/server.ts";

// The executable npm links as `payments` (it runs the built dist/main.js).
const BIN = fileURLToPath(new URL("../../bin/payments.js", import.meta.url));

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

/** Runs the executable with only the environment given (no PAYMENTS_* leaks in from the test process). */
function run(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      BIN,
      args,
      { env: { PATH: process.env.PATH ?? "", PAYMENTS_BASE_URL: server.baseUrl, ...env }, timeout: 20_000 },
      (error, stdout, stderr) => {
        // A non-numeric code means the process did not run (EACCES, ENOENT): say so in stderr.
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : -1;
        resolve({ code, stdout, stderr: code === -1 ? `${stderr}${error?.message}` : stderr });
      },
    );
  });
}

const operator = () => ({ PAYMENTS_ADMIN_TOKEN: server.adminToken });

async function json<T = any>(args: string[], env: Record<string, string>): Promise<T> {
  const result = await run([...args, "--json"], env);
  if (result.code !== 0)
    throw new Error(`payments ${args.join(" ")}: ${result.code}\n${result.stdout}${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

/** A merchant with an API key, made through the CLI itself. */
async function merchantWithKey(): Promise<{ id: string; apiKey: string; secretKey: string }> {
  const merchant = await json(["merchants", "create", "--email", `cli-${randomUUID()}@example.com`], operator());
  const key = await json(["api-keys", "create", merchant.id, "--show-secrets"], operator());
  return { id: merchant.id, apiKey: key.apiKey, secretKey: key.secretKey };
}

// Each step starts a Node process: on a loaded machine a test of many steps takes longer than the default 30 s.
describe("payments CLI", { timeout: 180_000 }, () => {
  it("exits 2 with usage on no command, an unknown command, an unknown option, a missing argument or option", async () => {
    for (const args of [
      [],
      ["nonsense"],
      ["merchants", "create", "--email", "a@example.com", "--colour", "red"],
      ["merchants", "get"],
      ["merchants", "create"],
      ["invoices", "create", "--currency", "USDT"],
      ["withdrawals", "create", "--currency", "USDT", "--amount", "10", "--method", "seven"],
    ]) {
      const result = await run(args, { ...operator(), PAYMENTS_API_KEY: "k" });
      expect(result.code, args.join(" ")).toBe(2);
      expect(result.stderr + result.stdout).toMatch(/Usage|--help|required|must be|unknown|expects|Unknown option/);
    }
    const group = await run(["invoices"]);
    expect(group.code).toBe(2);
    expect(group.stderr).toContain("payments invoices create");
    expect((await run(["--help"])).code).toBe(0);
    expect((await run(["invoices", "create", "--help"])).stdout).toContain("--currency <value>");
  });

  it("exits 2 when credentials are missing, without calling the service", async () => {
    const noToken = await run(["merchants", "get", "m_1"]);
    expect(noToken.code).toBe(2);
    expect(noToken.stderr).toContain("PAYMENTS_ADMIN_TOKEN");
    const noKey = await run(["me"]);
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toContain("PAYMENTS_API_KEY");
    const noSecret = await run(["withdrawals", "create", "--currency", "USDT", "--amount", "10", "--method", "1"], {
      PAYMENTS_API_KEY: "k",
    });
    expect(noSecret.code).toBe(2);
    expect(noSecret.stderr).toContain("PAYMENTS_SECRET_KEY");
  });

  it("creates a merchant and prints it as a table, or as JSON with --json", async () => {
    const email = `cli-${randomUUID()}@example.com`;
    const table = await run(["merchants", "create", "--email", email, "--name", "Corner shop"], operator());
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^email\s+/m);
    expect(table.stdout).toContain(email);
    expect(table.stdout).toMatch(/merchantName\s+Corner shop/);
    const id = /^id\s+(\S+)$/m.exec(table.stdout)?.[1];
    const merchant = await json(["merchants", "get", id!], operator());
    expect(merchant).toMatchObject({ id, email, merchantName: "Corner shop", status: "active" });
  });

  it("prints a new API key's secret key once, plainly, and says it will not be shown again", async () => {
    const merchant = await json(["merchants", "create", "--email", `cli-${randomUUID()}@example.com`], operator());
    const asJson = await run(["api-keys", "create", merchant.id, "--json"], operator());
    expect(asJson.code).toBe(0);
    const key = JSON.parse(asJson.stdout);
    expect(key.apiKey).toMatch(/^pk_/);
    expect(key.secretKey).toMatch(/^[0-9a-f]{64}$/);
    expect(asJson.stderr).toContain("shown only this once");
    expect(asJson.stderr).toContain("will not be shown again");
    // The printed key is the service's own: it is accepted.
    const me = await json(["me"], { PAYMENTS_API_KEY: key.apiKey, PAYMENTS_SECRET_KEY: key.secretKey });
    expect(me.id).toBe(merchant.id);

    const asTable = await run(["api-keys", "create", merchant.id], operator());
    expect(asTable.code).toBe(0);
    expect(asTable.stdout).toMatch(/^secretKey\s+[0-9a-f]{64}$/m);
    expect(asTable.stdout).not.toContain("hidden");
    expect(asTable.stderr).toContain("will not be shown again");

    const legacy = await run(["api-keys", "create", merchant.id, "--legacy", "--json"], operator());
    expect(legacy.code).toBe(0);
    expect(legacy.stderr).not.toContain("shown only this once");
  });

  it("makes a scoped key limited to address ranges, and lists keys with their scopes and last use", async () => {
    const merchant = await json(["merchants", "create", "--email", `cli-${randomUUID()}@example.com`], operator());
    const args = ["api-keys", "create", merchant.id, "--scopes", "invoices:write,read"];
    const key = await json([...args, "--allowed-addresses", "10.0.0.0/8, 127.0.0.1/32"], operator());
    const me = await run(["me"], { PAYMENTS_API_KEY: key.apiKey, PAYMENTS_SECRET_KEY: key.secretKey });
    expect(me.code).toBe(0);
    const listed = await json(["api-keys", "list", merchant.id], operator());
    expect(listed).toEqual([
      expect.objectContaining({ scopes: ["invoices:write", "read"], allowedAddresses: ["10.0.0.0/8", "127.0.0.1/32"] }),
    ]);
    const table = await run(["api-keys", "list", merchant.id], operator());
    expect(table.stdout).toMatch(/^id\s+prefix\s+scopes\s+allowedAddresses\s+lastUsedAt\s+lastUsedFrom/im);
    const refused = await run(["api-keys", "create", merchant.id, "--allowed-addresses", "10.1.2.3/8"], operator());
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("invalid_address_range");
  });

  it("hides callback secrets unless --show-secrets (left out of JSON, no placeholder), and never prints the admin token", async () => {
    const merchant = await json(["merchants", "create", "--email", `cli-${randomUUID()}@example.com`], operator());
    const hidden = await run(["api-keys", "create", merchant.id, "--json"], operator());
    expect(hidden.code).toBe(0);

    const secretHidden = await run(["merchants", "callback-secret", merchant.id], operator());
    expect(secretHidden.stdout).not.toContain("whsec_");
    expect(secretHidden.stdout).toContain("--show-secrets");
    const hiddenJson = await run(["merchants", "callback-secret", merchant.id, "--json"], operator());
    expect(hiddenJson.code).toBe(0);
    const withoutSecret = JSON.parse(hiddenJson.stdout);
    expect(withoutSecret).not.toHaveProperty("callbackSecret");
    expect(hiddenJson.stdout).not.toContain("hidden");
    expect(hiddenJson.stderr).toContain("Hidden: the callback secret (add --show-secrets to print it)");
    const secretShown = await json(["merchants", "callback-secret", merchant.id, "--show-secrets"], operator());
    expect(secretShown.callbackSecret).toMatch(/^whsec_/);

    const failing = await run(["merchants", "get", "no-such-merchant"], operator());
    const passed = await run(["merchants", "get", merchant.id, "--admin-token", server.adminToken]);
    for (const result of [hidden, secretHidden, failing, passed]) {
      expect(result.stdout + result.stderr).not.toContain(server.adminToken);
    }
  });

  it("exits 1 on an API error and prints its problem, as text or as JSON", async () => {
    const human = await run(["merchants", "get", "no-such-merchant"], operator());
    expect(human.code).toBe(1);
    expect(human.stderr).toMatch(/^Error 404 merchant_not_found: /);
    const machine = await run(["merchants", "get", "no-such-merchant", "--json"], operator());
    expect(machine.code).toBe(1);
    expect(JSON.parse(machine.stdout)).toMatchObject({ status: 404, code: "merchant_not_found" });
    const badToken = await run(["merchants", "get", "x"], { PAYMENTS_ADMIN_TOKEN: "wrong-token-wrong-token" });
    expect(badToken.code).toBe(1);
    expect(badToken.stderr).toContain("401");
    const unreachable = await run(["version", "--base-url", "http://127.0.0.1:1", "--max-retries", "0"]);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toMatch(/^Error network/);
  });

  it("lists networks and asks the service to deploy the forwarder factory (no wallet here: 409 wallet_not_configured)", async () => {
    expect(await json(["networks", "list"], operator())).toEqual([]);
    const deploy = await run(["networks", "deploy-factory", "ethereum", "--json"], operator());
    expect(deploy.code).toBe(1);
    expect(JSON.parse(deploy.stdout)).toMatchObject({ status: 409, code: "wallet_not_configured" });
  });

  it("creates and reads invoices through the SDK with the key from the environment", async () => {
    const m = await merchantWithKey();
    const env = { PAYMENTS_API_KEY: m.apiKey };
    const created = await json(
      ["invoices", "create", "--currency", "USDT", "--amount", "42", "--order-no", "cli-7"],
      env,
    );
    expect(created).toMatchObject({ status: "pending", amount: "42", order_no: "cli-7", merchant_id: m.id });
    const shown = await run(["invoices", "get", created.id], env);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/status\s+pending/);
    const byOrder = await run(["invoices", "by-order", "cli-7"], env);
    expect(byOrder.stdout.split("\n")[0]).toMatch(/^ID\s+STATUS\s+CURRENCY\s+AMOUNT/);
    expect(byOrder.stdout).toContain(created.id);
    expect((await json(["me"], env)).id).toBe(m.id);
    const fees = await json(["invoices", "estimate-fees", "--currency", "USDT", "--amount", "100"], env);
    expect(fees.amount).toBe(100);
    const currencies = await run(["currencies", "list"]);
    expect(currencies.stdout.split("\n")[0]).toMatch(/^TICKER\s+FULLNAME\s+NETWORK\s+TYPE/);
  });

  it("funds a merchant, registers a method and withdraws (signed), retried safely under the same --request-id", async () => {
    const m = await merchantWithKey();
    expect(
      (
        await run(
          ["balances", "adjust", m.id, "--currency", "USDT", "--amount", "50", "--memo", "cli test"],
          operator(),
        )
      ).code,
    ).toBe(0);
    const method = await json(
      ["withdrawal-methods", "create", m.id, "--currency", "USDT", "--address", "0xabc"],
      operator(),
    );
    const env = { PAYMENTS_API_KEY: m.apiKey, PAYMENTS_SECRET_KEY: m.secretKey };
    const requestId = randomUUID();
    const args = ["withdrawals", "create", "--currency", "USDT", "--amount", "20", "--method", String(method.id)];
    const first = await json([...args, "--request-id", requestId], env);
    expect(first.request).toMatchObject({ id: requestId, amount: "20", status: "processing" });
    const again = await json([...args, "--request-id", requestId], env);
    expect(again.request.created_at).toBe(first.request.created_at);
    const balances = await run(["balances", "get", m.id], operator());
    // One row per catalog entry (product §23): the ticker, its entry and network, then the amount.
    expect(balances.stdout).toMatch(/USDT\s+USDT_ERC20\s+ethereum\s+30/);
    const conflict = await run([...args.slice(0, 5), "21", ...args.slice(6), "--request-id", requestId], env);
    expect(conflict.code).toBe(1);
    expect(conflict.stderr).toContain("409 request_id_reused");
    expect(conflict.stderr).toContain(requestId);
    const payouts = await json(["payouts", "list"], operator());
    expect(payouts.some((p: { requestId?: string }) => JSON.stringify(p).includes(requestId))).toBe(true);
    for (const result of [first, again]) expect(JSON.stringify(result)).not.toContain(m.secretKey);
  });
  it("drives the rest of the operator API: update, limits, methods, revocation, callbacks, reconciliation", async () => {
    const m = await merchantWithKey();
    const suspended = await json(["merchants", "update", m.id, "--status", "suspended"], operator());
    expect(suspended.status).toBe("suspended");
    expect((await json(["merchants", "update", m.id, "--status", "active"], operator())).status).toBe("active");
    expect((await run(["merchants", "update", m.id], operator())).code).toBe(2);

    const limits = await json(["currencies", "set-limits", "USDT", "--min", "10", "--max", "50000"], operator());
    expect(limits).toMatchObject({ ticker: "USDT", withdrawalMin: "10", withdrawalMax: "50000" });
    const config = await run(["currencies", "config"], operator());
    expect(config.stdout.split("\n")[0]).toMatch(/^TICKER\s+/);
    expect(config.stdout).toMatch(/USDT\s+/);

    const cold = await json(
      ["withdrawal-methods", "create", m.id, "--currency", "USDT", "--address", "0xfeed", "--label", "cold"],
      operator(),
    );
    const methods = await run(["withdrawal-methods", "list", m.id], operator());
    expect(methods.stdout).toMatch(/0xfeed\s+cold/);
    const disabled = await json(["withdrawal-methods", "disable", m.id, String(cold.id)], operator());
    expect(disabled).toMatchObject({ id: cold.id, disabledAt: expect.any(String) });

    const invoice = await json(["invoices", "create", "--currency", "USDT", "--amount", "5"], {
      PAYMENTS_API_KEY: m.apiKey,
    });
    expect(await json(["callbacks", "list", invoice.id], operator())).toEqual([]);
    const unknownEvent = await run(["callbacks", "redeliver", "evt_00000000000000000000000000000000"], operator());
    expect(unknownEvent.code).toBe(1);
    expect(unknownEvent.stderr).toContain("404 callback_event_not_found");
    const unknownPayout = await run(["payouts", "reconcile", randomUUID(), "--status", "completed"], operator());
    expect(unknownPayout.code).toBe(1);
    expect(unknownPayout.stderr).toContain("404 payout_not_found");

    expect(await json(["api-keys", "revoke", m.apiKey], operator())).toEqual({ revoked: true });
    const revoked = await run(["me"], { PAYMENTS_API_KEY: m.apiKey });
    expect(revoked.code).toBe(1);
    expect(revoked.stderr).toMatch(/^Error 401 /);
  });
});
