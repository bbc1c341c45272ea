// Decisions on customers' deposits (product §30, §21) on a local chain, a list file and a local double of the screening provider: a listed sender's deposit waits for the operator (clear: credited once with its callback delivered over HTTP; block: nothing credited), a sender not screened is retried by the screening worker, a held deposit is credited by the merchant; refusals as problems; the ledger audit after each.
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { listLedgerEntries } from "../../src/store/ledgerLines.ts";
import { postCallback } from "../../src/workers/callbackHttp.ts";
import { startCallbackWorker } from "../../src/workers/callbacks.ts";
import type { Loop } from "../../src/workers/loop.ts";
import { type Receiver, startReceiver, waitFor } from "../support/callbacks.ts";
import type { LocalChain, TestToken } from "../support/chain.ts";
import {
  auditAndExpect,
  CONFIRMATIONS,
  getDeposit,
  listDeposits,
  mineAndScan,
  payer,
  startLiveFixture,
  usdt,
} from "../support/live.ts";
import { DOUBLE_SCREENING_KEY, type ScreeningDouble, startScreeningDouble } from "../support/screeningDouble.ts";
import { admin, createMerchant, expectProblem, merchant, type TestServer } from "../support/server.ts";

let chain: LocalChain;
let token: TestToken;
let server: TestServer;
let provider: ScreeningDouble;
let receiver: Receiver;
let callbacks: Loop;
let folder: string;
let shop: { id: string; apiKey: string };
/** Customer A's address (active, callbacks to the receiver) and customer B's (deactivated). */
let addressA: string;
let addressB: string;

/** Payers: 1 clear (the provider's answer cached), 2 on the list file, 3 unknown to the provider's cache. */
const CLEAN = 1;
const LISTED = 2;
const UNSCREENED = 3;

beforeAll(async () => {
  provider = await startScreeningDouble();
  receiver = await startReceiver();
  folder = mkdtempSync(join(tmpdir(), "deposit-decisions-"));
  const listPath = join(folder, "list.txt");
  writeFileSync(listPath, "# screening list\n");
  ({ chain, token, server } = await startLiveFixture({
    env: {
      SCREENING_LIST: listPath,
      SCREENING_PROVIDER_URL: provider.url,
      SCREENING_PROVIDER_KEY: DOUBLE_SCREENING_KEY,
      SCREENING_PROVIDER_TIMEOUT_MS: "300",
      SCREENING_CACHE_SECONDS: "3600",
      SCREENING_RETRY_MS: "50",
      SCREENING_MAX_ATTEMPTS: "50",
    },
  }));
  appendFileSync(listPath, `${payer(chain, LISTED)}\n`);
  for (const i of [LISTED, UNSCREENED]) await chain.waitForReceipt(await token.mint(payer(chain, i), usdt("1000")));
  // The scanner reads the provider's cache only: payer 1 is known clear, as a regular sender is.
  expect(await server.ctx.screening.provider?.check(payer(chain, CLEAN))).toBe("clear");
  // The merchant's host does not resolve: delivery resolves it to a public address, pinned here to the local receiver.
  callbacks = startCallbackWorker(server.ctx, server.app.log, {
    autoStart: false,
    timeoutMs: 5000,
    lookup: async () => [{ address: "93.184.216.34", family: 4 }],
    post: (post) => postCallback({ ...post, destination: { ...post.destination, address: loopback } }),
  });
  shop = await createMerchant(server, { feePercent: "1" });
  const create = (customer: string, extra: Record<string, unknown> = {}) =>
    merchant(server, shop.apiKey, "POST", "/public/v1/deposit-addresses", { customer, currency: "USDT", ...extra });
  const a = await create("cust-a", { callbackUrl: `http://merchant-hooks.test:${receiver.port}/callbacks` });
  const b = await create("cust-b");
  expect([a.status, b.status], a.text + b.text).toEqual([200, 200]);
  addressA = a.body.address;
  addressB = b.body.address;
  const off = await merchant(server, shop.apiKey, "PATCH", `/public/v1/deposit-addresses/${b.body.id}`, {
    active: false,
  });
  expect(off.status, off.text).toBe(200);
}, 120_000);

const loopback = { address: "127.0.0.1", family: 4 as const };

afterAll(async () => {
  await callbacks?.stop();
  await server?.close();
  await chain?.close();
  await provider?.close();
  await receiver?.close();
  if (folder) rmSync(folder, { recursive: true, force: true });
});

/** A transfer from payer `from` to `to`, mined to depth and scanned; answers the deposit it made. */
async function deposit(from: number, to: string, amount: string): Promise<Record<string, any>> {
  const before = new Set((await deposits()).map((d) => d.id));
  await chain.waitForReceipt(await token.transfer(payer(chain, from), to as `0x${string}`, usdt(amount)));
  await mineAndScan(server, chain, CONFIRMATIONS + 1);
  const made = (await deposits()).filter((d) => !before.has(d.id));
  expect(made.map((d) => d.amount)).toEqual([amount]);
  return made[0] as Record<string, any>;
}

const deposits = () => listDeposits(server, shop.apiKey);
const depositById = (id: string) => getDeposit(server, shop.apiKey, id);

async function available(): Promise<string | undefined> {
  const rows = await admin(server, "GET", `/merchants/${shop.id}/balances`);
  return (rows.body as { internalTicker: string; available: string }[]).find((b) => b.internalTicker === "USDT_ERC20")
    ?.available;
}

/** Ledger movements of one deposit, as `kind` per movement. */
async function movementsOf(depositId: string): Promise<string[]> {
  const rows = await server.ctx.store.db
    .selectFrom("ledger_movements")
    .select("kind")
    .where("cause", "=", "deposit")
    .where("cause_id", "=", depositId)
    .execute();
  return rows.map((r) => r.kind).sort();
}

/** The callbacks the receiver got for one deposit, by event type. */
function deliveredFor(depositId: string): string[] {
  return receiver.received
    .map((r) => JSON.parse(r.body) as { type: string; data: { deposit: { id: string } } })
    .filter((b) => b.data?.deposit?.id === depositId)
    .map((b) => b.type);
}

describe("the operator's decision on a deposit in aml_check", () => {
  let cleared: Record<string, any>;

  it("a listed sender's deposit waits in the operator's queue; cleared, it is credited once and its callback delivered", async () => {
    const waiting = await deposit(LISTED, addressA, "20");
    expect([waiting.status, waiting.creditedAmount]).toEqual(["aml_check", null]);
    expect(await movementsOf(waiting.id)).toEqual([]);
    const queue = await admin(server, "GET", "/deposits?status=aml_check");
    expect(queue.status, queue.text).toBe(200);
    expect(queue.body.items.map((d: { id: string }) => d.id)).toContain(waiting.id);
    expect((await admin(server, "GET", "/screening")).body).toMatchObject({
      waitingDeposits: 0,
      depositsInAmlCheck: 1,
    });
    // Ten racing decisions: one moves it, the others find it decided.
    const answers = await Promise.all(
      Array.from({ length: 10 }, () =>
        admin(server, "POST", `/deposits/${waiting.id}/aml`, { decision: "clear", reason: "known exchange" }),
      ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, ...Array(9).fill(409)]);
    for (const a of answers.filter((x) => x.status === 409)) expectProblem(a, 409, "deposit_not_in_aml_check");
    const decided = answers.find((a) => a.status === 200) as (typeof answers)[number];
    expect(decided.body).toMatchObject({ id: waiting.id, status: "completed", creditedAmount: "18.8" });
    expect(await available()).toBe("18.8");
    expect(await movementsOf(waiting.id)).toEqual(["credit"]);
    const again = await admin(server, "POST", `/deposits/${waiting.id}/aml`, { decision: "block" });
    expectProblem(again, 409, "deposit_not_in_aml_check");
    expect(await available()).toBe("18.8");
    const audit = await server.ctx.store.db
      .selectFrom("deposit_decisions")
      .select(["decision", "actor", "status_after", "reason"])
      .where("deposit_id", "=", waiting.id)
      .execute();
    expect(audit).toEqual([
      { decision: "clear", actor: "operator", status_after: "completed", reason: "known exchange" },
    ]);
    await waitFor(async () => {
      await callbacks.runOnce();
      return deliveredFor(waiting.id).length > 0;
    });
    expect(deliveredFor(waiting.id)).toEqual(["deposit.completed"]);
    cleared = waiting;
    await auditAndExpect(server);
  });

  it("blocked, the deposit ends in the screening account: nothing is credited", async () => {
    const waiting = await deposit(LISTED, addressA, "30");
    expect(waiting.status).toBe("aml_check");
    const decided = await admin(server, "POST", `/deposits/${waiting.id}/aml`, { decision: "block" });
    expect(decided.status, decided.text).toBe(200);
    expect(decided.body).toMatchObject({ status: "blocked", creditedAmount: null });
    expect(await movementsOf(waiting.id)).toEqual(["blocked"]);
    expect(await available()).toBe("18.8");
    const queue = await admin(server, "GET", "/deposits");
    expect(queue.body.items.map((d: { id: string }) => d.id)).not.toContain(waiting.id);
    await auditAndExpect(server);
  });

  it("refuses an unknown deposit (404), a deposit not in aml_check (409) and a bad body (400), changing nothing", async () => {
    expectProblem(
      await admin(server, "POST", "/deposits/dep_nope/aml", { decision: "clear" }),
      404,
      "deposit_not_found",
    );
    expectProblem(
      await admin(server, "POST", `/deposits/${cleared.id}/aml`, { decision: "clear" }),
      409,
      "deposit_not_in_aml_check",
    );
    expectProblem(
      await admin(server, "POST", `/deposits/${cleared.id}/aml`, { decision: "maybe" }),
      400,
      "validation_failed",
    );
    expectProblem(await admin(server, "GET", "/deposits?status=lost"), 400, "validation_failed");
    expect((await depositById(cleared.id)).status).toBe("completed");
    expect(await available()).toBe("18.8");
  });
});

describe("the screening worker's retries for a deposit whose sender was not screened", () => {
  it("a sender the provider could not answer for waits in aml_check, and is credited once the provider clears it", async () => {
    provider.mode = "error500";
    const waiting = await deposit(UNSCREENED, addressA, "40");
    expect(waiting.status).toBe("aml_check");
    const row = await server.ctx.store.db
      .selectFrom("deposits")
      .select(["screening", "screening_attempts"])
      .where("id", "=", waiting.id)
      .executeTakeFirstOrThrow();
    expect(row.screening).toBe("pending");
    expect(Number(row.screening_attempts)).toBeGreaterThan(0);
    expect(await available()).toBe("18.8");
    expect((await admin(server, "GET", "/screening")).body).toMatchObject({
      waitingDeposits: 1,
      depositsInAmlCheck: 1,
    });
    provider.mode = "normal";
    await waitFor(async () => {
      await server.workers.loops.screening?.runOnce();
      return (await depositById(waiting.id)).status !== "aml_check";
    });
    expect(await depositById(waiting.id)).toMatchObject({ status: "completed", creditedAmount: "38.6" });
    expect(await movementsOf(waiting.id)).toEqual(["credit"]);
    expect(await available()).toBe("57.4");
    expect((await admin(server, "GET", "/screening")).body).toMatchObject({
      waitingDeposits: 0,
      depositsInAmlCheck: 0,
    });
    await auditAndExpect(server);
  });
});

describe("the merchant's decision on a deposit held at a deactivated address", () => {
  it("credits it from the hold with the fees, once; refusals change nothing", async () => {
    const held = await deposit(CLEAN, addressB, "10");
    expect(held.status).toBe("held");
    expect(await movementsOf(held.id)).toEqual(["held"]);
    const resolve = (id: string, body: unknown, key = shop.apiKey) =>
      merchant(server, key, "POST", `/public/v1/deposits/${id}/resolve`, body);
    expectProblem(await resolve(held.id, { action: "keep" }), 400, "validation_failed");
    const stranger = await createMerchant(server);
    expectProblem(await resolve(held.id, { action: "credit" }, stranger.apiKey), 404, "deposit_not_found");
    expectProblem(await resolve("dep_nope", { action: "credit" }), 404, "deposit_not_found");
    // A retried request racing the first: one credits it, the other finds it completed.
    const answers = await Promise.all([resolve(held.id, { action: "credit" }), resolve(held.id, { action: "credit" })]);
    expect(answers.map((a) => a.status).sort()).toEqual([200, 409]);
    const credited = answers.find((a) => a.status === 200) as (typeof answers)[number];
    expect(credited.body).toMatchObject({
      status: "completed",
      merchantFee: "0.1",
      networkFee: "1",
      creditedAmount: "8.9",
    });
    expectProblem(await resolve(held.id, { action: "credit" }), 409, "deposit_not_held");
    expect(await movementsOf(held.id)).toEqual(["credit", "held"]);
    expect(await available()).toBe("66.3");
    // The dashboard's ledger names each deposit's credit a deposit, never an adjustment.
    const lines = await listLedgerEntries(server.ctx.store, shop.id, "USDT", undefined, 100);
    expect(lines.map((l) => [l.cause, l.causeId, l.amountMinor])).toContainEqual(["deposit", held.id, 8_900_000n]);
    expect(new Set(lines.map((l) => l.cause))).toEqual(new Set(["deposit"]));
    const events = await merchant(server, shop.apiKey, "GET", "/public/v1/events?type=deposit.completed");
    expect(
      events.body.data.filter((e: { data: { deposit: { id: string } } }) => e.data.deposit.id === held.id),
    ).toHaveLength(1);
    await auditAndExpect(server);
  });
});
