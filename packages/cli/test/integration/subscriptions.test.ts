// The built `payments` executable on product §29: `plans` create, list, get, retire and `subscriptions` create (signed), list, get, change-plan, advance, cancel.
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pay } from "../../../../test/support/invoices.ts";
import { createMerchant, startTestServer, type TestServer } from "../../../../test/support/server.ts";

const BIN = fileURLToPath(new URL("../../bin/payments.js", import.meta.url));
const DAY = 86_400_000;

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

function run(args: string[], extra: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const env = { PATH: process.env.PATH ?? "", PAYMENTS_BASE_URL: server.baseUrl, ...extra };
    execFile(BIN, args, { env, timeout: 20_000 }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : -1, stdout, stderr });
    });
  });
}

async function json<T = any>(args: string[], extra: Record<string, string>): Promise<T> {
  const result = await run([...args, "--json"], extra);
  if (result.code !== 0)
    throw new Error(`payments ${args.join(" ")}: ${result.code}\n${result.stdout}${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

// Each command is a process of its own (a second or more on a loaded machine): the default 30 s is too tight.
describe("payments CLI, plans and subscriptions", { timeout: 180_000 }, () => {
  it("creates, lists, reads and retires plans, and refuses a bad interval as a usage error", async () => {
    const m = await createMerchant(server);
    const key = { PAYMENTS_API_KEY: m.apiKey };
    const plan = await json(
      ["plans", "create", "--name", "Pro", "--currency", "USDT", "--amount", "10", "--interval", "week"],
      key,
    );
    expect(plan).toMatchObject({ name: "Pro", amount: "10", interval: "week", intervalCount: 1, active: true });
    const fortnightly = await json(
      ["plans", "create", "--name", "Duo", "--currency", "USDT", "--amount", "15", "--interval", "week"].concat([
        "--interval-count",
        "2",
        "--trial-days",
        "7",
        "--grace-days",
        "1",
      ]),
      key,
    );
    expect(fortnightly).toMatchObject({ intervalCount: 2, trialDays: 7, graceDays: 1 });
    expect(await json(["plans", "get", plan.id], key)).toEqual(plan);
    expect((await json<{ id: string }[]>(["plans", "list"], key)).map((p) => p.id)).toEqual([fortnightly.id, plan.id]);
    const bad = await run(
      ["plans", "create", "--name", "x", "--currency", "USDT", "--amount", "1"].concat(["--interval", "fortnight"]),
      key,
    );
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--interval is day, week, month or year");
    expect((await json(["plans", "retire", plan.id], key)).active).toBe(false);
  });

  it("subscribes (signed, retried with its request id), lists, changes plan, advances the clock and cancels", async () => {
    const m = await createMerchant(server);
    const key = { PAYMENTS_API_KEY: m.apiKey, PAYMENTS_SECRET_KEY: m.secretKey };
    const create = (name: string, amount: string) =>
      json(["plans", "create", "--name", name, "--currency", "USDT", "--amount", amount, "--interval", "week"], key);
    const plan = await create("Pro", "10");
    const team = await create("Team", "30");
    const requestId = crypto.randomUUID();
    const args = ["subscriptions", "create", "--plan", plan.id, "--customer", "cust-1", "--email", "c@example.com"];
    const created = await json([...args, "--request-id", requestId], key);
    expect(created).toMatchObject({
      status: "incomplete",
      customer: { reference: "cust-1" },
      openInvoice: { period: 1 },
    });
    expect(await json([...args, "--request-id", requestId], key)).toEqual(created);
    const unsigned = await run(args, { PAYMENTS_API_KEY: m.apiKey });
    expect(unsigned.code).toBe(2);
    expect(unsigned.stderr).toContain("this operation is signed");

    const listed = await json<{ id: string }[]>(
      ["subscriptions", "list", "--status", "incomplete", "--customer", "cust-1"],
      key,
    );
    expect(listed.map((s) => s.id)).toEqual([created.id]);
    const table = await run(["subscriptions", "list"], key);
    expect(table.stdout.split("\n")[0]).toMatch(/^ID\s+STATUS\s+PLANID\s+CUSTOMER/);

    expect((await pay(server, m.apiKey, created.openInvoice.id)).status).toBe(200);
    const changed = await json(["subscriptions", "change-plan", created.id, "--plan", team.id], key);
    expect(changed).toMatchObject({ status: "active", nextPlanId: team.id });
    const to = new Date(Date.parse(changed.currentPeriodEnd) - DAY).toISOString();
    const advanced = await json(["subscriptions", "advance", created.id, "--to", to], key);
    expect(advanced).toMatchObject({ testClock: to, openInvoice: { period: 2, amount: "30" } });
    const later = await json(["subscriptions", "cancel", created.id, "--at-period-end"], key);
    expect(later).toMatchObject({ status: "active", cancelAtPeriodEnd: true });
    expect((await json(["subscriptions", "cancel", created.id], key)).status).toBe("canceled");
    expect((await json(["subscriptions", "get", created.id], key)).status).toBe("canceled");
  });
});
