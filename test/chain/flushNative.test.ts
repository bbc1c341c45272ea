// A flush of a native-coin (ETH) deposit end to end (product §24): an ETH and a token deposit at forwarders paid, confirmed and moved to the hot wallet in one batch, the gas split over both, the ledger audited; and the operator's list and retry of a deposit whose flush failed for good.
import { type Hex, parseEther } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deployFactory } from "../../src/chain/forwarders.ts";
import { factoryAddress } from "../../src/domain/forwarders.ts";
import { type LocalChain, SERVICE_MNEMONIC, startLocalChain, type TestToken } from "../support/chain.ts";
import { forwarderInvoice } from "../support/forwarderInvoices.ts";
import {
  auditAndExpect,
  CONFIRMATIONS,
  getInvoice,
  liveMerchant,
  outboxOf,
  payer,
  scan,
  startLiveServer,
  usdt,
} from "../support/live.ts";
import { admin, type TestServer } from "../support/server.ts";

const hot = mnemonicToAccount(SERVICE_MNEMONIC, { addressIndex: 0 });
const factory = factoryAddress(hot.address);
let chain: LocalChain;
let token: TestToken;
let server: TestServer;

beforeAll(async () => {
  chain = await startLocalChain({ chainId: 1 });
  token = await chain.deployToken();
  await chain.waitForReceipt(await chain.sendEth(chain.accounts[2] as Hex, hot.address, parseEther("10")));
  const deployed = await deployFactory({ client: chain.client, signer: hot });
  if (!deployed.ok) throw new Error(`factory: ${deployed.error} ${deployed.detail ?? ""}`);
  expect(deployed.value.address).toBe(factory);
  // Batches of 2: the ETH and the token deposit go together; the wait is long, so only the batch size starts a flush.
  server = await startLiveServer(chain, token, { env: { FLUSH_BATCH_SIZE: "2", FLUSH_MAX_WAIT_MS: "3600000" } });
  await token.mint(payer(chain, 1), usdt("1000"));
  await scan(server);
}, 120_000);

afterAll(async () => {
  await server?.close();
  await chain?.close();
});

async function mineAndScanAll(blocks: number): Promise<void> {
  await chain.mine(blocks);
  for (let i = 0; i < 10; i++) if ((await scan(server)) === 0) return;
}

/** A flush is settled only once its block is the network's confirmations deep: the blocks that make it so. */
const deepen = () => mineAndScanAll(CONFIRMATIONS);

describe("a flush of a native-coin deposit", () => {
  it("moves an ETH deposit and a token deposit to the hot wallet in one flush, the gas split over both, no ETH sent to a deposit address", async () => {
    const m = await liveMerchant(server);
    const eth = await forwarderInvoice(server, m.apiKey, { currency: "ETH", amount: "0.5" }, hot.address);
    const tok = await forwarderInvoice(server, m.apiKey, { currency: "USDT", amount: "10" }, hot.address);
    // ETH to an address with no code yet: a plain transfer waits there until the flush deploys the forwarder.
    await chain.waitForReceipt(await chain.sendEth(payer(chain, 1), eth.deposit_address, parseEther("0.5")));
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), tok.deposit_address, usdt("10")));
    const nonceBefore = await chain.client.getTransactionCount({ address: hot.address });
    const ethBefore = await chain.client.getBalance({ address: hot.address });
    const tokenBefore = await token.balanceOf(hot.address);
    await mineAndScanAll(CONFIRMATIONS);
    await deepen();
    for (const invoice of [eth, tok]) expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("completed");
    const deposits = await server.ctx.store.db
      .selectFrom("flush_deposits")
      .selectAll()
      .where("invoice_id", "in", [eth.id, tok.id])
      .execute();
    const byInvoice = new Map(deposits.map((d) => [d.invoice_id, d] as const));
    const ethDeposit = byInvoice.get(eth.id);
    const tokDeposit = byInvoice.get(tok.id);
    // The ETH deposit is queued as the native coin (no token), in wei.
    expect([ethDeposit?.token, ethDeposit?.amount, ethDeposit?.currency]).toEqual([
      null,
      parseEther("0.5").toString(),
      "ETH",
    ]);
    expect([ethDeposit?.state, ethDeposit?.outcome, ethDeposit?.flushed_amount]).toEqual([
      "flushed",
      "Flushed",
      parseEther("0.5").toString(),
    ]);
    expect([tokDeposit?.state, tokDeposit?.outcome, tokDeposit?.flushed_amount]).toEqual([
      "flushed",
      "Flushed",
      "10000000",
    ]);
    // One flush carried both.
    expect(ethDeposit?.flush_id).not.toBeNull();
    expect(ethDeposit?.flush_id).toBe(tokDeposit?.flush_id);
    const flush = await server.ctx.store.db
      .selectFrom("flushes")
      .selectAll()
      .where("id", "=", ethDeposit?.flush_id as string)
      .executeTakeFirstOrThrow();
    expect(flush.state).toBe("completed");
    const gas = BigInt(flush.gas_cost as string);
    expect(gas).toBeGreaterThan(0n);
    // The hot wallet: one transaction (the flush), +0.5 ETH less the gas it paid, +10 USDT; nothing left at the forwarders.
    expect(await chain.client.getTransactionCount({ address: hot.address })).toBe(nonceBefore + 1);
    expect(await chain.client.getBalance({ address: hot.address })).toBe(ethBefore + parseEther("0.5") - gas);
    expect(await token.balanceOf(hot.address)).toBe(tokenBefore + usdt("10"));
    expect(await chain.client.getBalance({ address: eth.deposit_address })).toBe(0n);
    expect(await token.balanceOf(tok.deposit_address)).toBe(0n);
    const [mined] = (await outboxOf(server, "flush")).filter(
      (t) => t.purpose_id === flush.id && t.state === "confirmed",
    );
    const receipt = await chain.client.getTransactionReceipt({ hash: mined?.hash as Hex });
    const sent = await chain.client.getTransaction({ hash: receipt.transactionHash });
    expect([sent.to?.toLowerCase(), sent.value]).toEqual([factory.toLowerCase(), 0n]);
    // The gas split exactly over the two deposits, each share posted from the operator's network fees.
    expect(BigInt(ethDeposit?.gas_share ?? "0") + BigInt(tokDeposit?.gas_share ?? "0")).toBe(gas);
    const posted = await server.ctx.store.db
      .selectFrom("ledger_movements")
      .innerJoin("ledger_entries", "ledger_entries.movement_id", "ledger_movements.id")
      .select(["ledger_entries.amount as amount", "ledger_entries.currency as currency"])
      .where("ledger_movements.cause", "=", "flush")
      .where("ledger_movements.cause_id", "=", flush.id)
      .where("ledger_entries.account", "=", "operator:network_fees")
      .execute();
    expect(posted.length).toBe(2);
    expect(posted.reduce((sum, p) => sum - BigInt(p.amount), 0n)).toBe(gas);
    // No sweep, no gas funding for either.
    const sweeps = await server.ctx.store.db
      .selectFrom("sweeps")
      .select("id")
      .where("invoice_id", "in", [eth.id, tok.id])
      .execute();
    expect(sweeps).toEqual([]);
    await auditAndExpect(server);
  });

  it("lists a deposit whose flush failed for good, puts it back to waiting on the operator's retry (audited, idempotent, 404/409), and flushes it", async () => {
    const m = await liveMerchant(server);
    const invoice = await forwarderInvoice(server, m.apiKey, { currency: "USDT", amount: "4" }, hot.address);
    await chain.waitForReceipt(await token.transfer(payer(chain, 1), invoice.deposit_address, usdt("4")));
    // The token refuses to move it (a blocklist): its flushes come back FlushFailed.
    await chain.waitForReceipt(await token.setBlocked(invoice.deposit_address, true));
    await mineAndScanAll(CONFIRMATIONS);
    const deposit = () =>
      server.ctx.store.db
        .selectFrom("flush_deposits")
        .selectAll()
        .where("invoice_id", "=", invoice.id)
        .executeTakeFirstOrThrow();
    const paymentId = (await deposit()).payment_id;
    // Its last attempt: one attempt short of the bound, aged past FLUSH_MAX_WAIT_MS so it goes alone.
    const aged = new Date(Date.now() - 3_600_000).toISOString();
    await server.ctx.store.transaction((tx) =>
      tx.db
        .updateTable("flush_deposits")
        .set({ attempts: 4, created_at: aged })
        .where("invoice_id", "=", invoice.id)
        .execute(),
    );
    await mineAndScanAll(1);
    await deepen();
    const failed = await deposit();
    expect([failed.state, failed.outcome, failed.attempts]).toEqual(["failed", "FlushFailed", 5]);
    // Not yet failed: the retry refuses a deposit it cannot retry with stable codes.
    expect((await admin(server, "POST", "/flush-deposits/no-such-payment/retry")).body).toMatchObject({
      status: 404,
      code: "flush_deposit_not_found",
    });
    // The operator's list: failed deposits only, paged.
    const listed = await admin(server, "GET", "/flush-deposits?state=failed");
    expect(listed.status, listed.text).toBe(200);
    const items = (listed.body as { items: Record<string, unknown>[]; nextBefore: string | null }).items;
    expect(items.map((i) => [i.paymentId, i.state, i.amount, i.currency, i.attempts, i.outcome])).toEqual([
      [paymentId, "failed", "4", "USDT", 5, "FlushFailed"],
    ]);
    expect(typeof items[0]?.lastError).toBe("string");
    expect((await admin(server, "GET", "/flush-deposits?state=lost")).status).toBe(400);
    expect((await admin(server, "GET", "/flush-deposits")).status).toBe(400);
    // Unblocked, then retried: waiting, due now, its attempts afresh; the retry recorded.
    await chain.waitForReceipt(await token.setBlocked(invoice.deposit_address, false));
    // Two at once (an operator's double click): both answered with it waiting, one retry recorded.
    const [retried, twin] = await Promise.all([
      admin(server, "POST", `/flush-deposits/${paymentId}/retry`),
      admin(server, "POST", `/flush-deposits/${paymentId}/retry`),
    ]);
    for (const answer of [retried, twin]) {
      expect(answer.status, answer.text).toBe(200);
      expect(answer.body).toMatchObject({ paymentId, state: "waiting", attempts: 0, flushId: null });
    }
    const again = await admin(server, "POST", `/flush-deposits/${paymentId}/retry`);
    expect(again.status, again.text).toBe(200);
    expect(again.body).toMatchObject({ paymentId, state: "waiting", attempts: 0 });
    const audit = await server.ctx.store.db
      .selectFrom("flush_deposit_retries")
      .selectAll()
      .where("payment_id", "=", paymentId)
      .execute();
    expect(audit.map((a) => [a.actor, a.attempts_before, a.last_error_before === null])).toEqual([
      ["operator", 5, false],
    ]);
    expect((await admin(server, "GET", "/flush-deposits?state=failed")).body).toMatchObject({ items: [] });
    // The next pass flushes it to the hot wallet.
    const hotBefore = await token.balanceOf(hot.address);
    await mineAndScanAll(1);
    await deepen();
    expect([(await deposit()).state, (await deposit()).outcome]).toEqual(["flushed", "Flushed"]);
    expect(await token.balanceOf(hot.address)).toBe(hotBefore + usdt("4"));
    // Flushed: nothing to retry.
    expect((await admin(server, "POST", `/flush-deposits/${paymentId}/retry`)).body).toMatchObject({
      status: 409,
      code: "flush_deposit_not_failed",
    });
    // Paged: the three flushed deposits of this file, one a page, newest first, each once.
    const seen: unknown[] = [];
    let before: string | null = null;
    for (let page = 0; page < 5; page++) {
      const query: string = `/flush-deposits?state=flushed&limit=1${before ? `&before=${before}` : ""}`;
      const answer = await admin(server, "GET", query);
      expect(answer.status, answer.text).toBe(200);
      const body = answer.body as { items: Record<string, unknown>[]; nextBefore: string | null };
      seen.push(...body.items.map((i) => i.paymentId));
      before = body.nextBefore;
      if (before === null) break;
    }
    expect(seen.length).toBe(3);
    expect(seen[0]).toBe(paymentId);
    expect(new Set(seen).size).toBe(3);
    await auditAndExpect(server);
  });
});
