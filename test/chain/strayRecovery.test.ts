// Stray tokens at forwarders are recoverable (issue 50 item 5) on anvil: a token the catalog lacks sent to an invoice's forwarder is listed from its transaction, the operator recovers it once into the hot wallet and the ledger (operator:stray:<network>) and marks it returned; ETH sent to a customer's USDT address is recovered as the native coin; a bad id, a stray at a derived address, and ETH to an ETH invoice's address are refused.
import { type Hex, parseEther, toHex } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deployFactory } from "../../src/chain/forwarders.ts";
import { factoryAddress } from "../../src/domain/forwarders.ts";
import { type LocalChain, SERVICE_MNEMONIC, startLocalChain, type TestToken } from "../support/chain.ts";
import { forwarderInvoice } from "../support/forwarderInvoices.ts";
import {
  asLegacyDerivedInvoice,
  auditAndExpect,
  CONFIRMATIONS,
  liveMerchant,
  payer,
  scan,
  startLiveServer,
} from "../support/live.ts";
import { admin, expectProblem, merchant, type TestServer } from "../support/server.ts";

const hot = mnemonicToAccount(SERVICE_MNEMONIC, { addressIndex: 0 });
let chain: LocalChain;
let token: TestToken;
/** A token the catalog lacks. */
let stray: TestToken;
let server: TestServer;

beforeAll(async () => {
  chain = await startLocalChain({ chainId: 1 });
  [token, stray] = [await chain.deployToken(), await chain.deployToken({ symbol: "ODD", decimals: 18 })];
  await chain.waitForReceipt(await chain.sendEth(chain.accounts[2] as Hex, hot.address, parseEther("10")));
  const deployed = await deployFactory({ client: chain.client, signer: hot });
  if (!deployed.ok) throw new Error(`factory: ${deployed.error} ${deployed.detail ?? ""}`);
  expect(deployed.value.address).toBe(factoryAddress(hot.address));
  // Deposits alone would wait an hour for a batch: a flush here is the recovery's own.
  server = await startLiveServer(chain, token, { env: { FLUSH_BATCH_SIZE: "50", FLUSH_MAX_WAIT_MS: "3600000" } });
  await stray.mint(payer(chain, 1), parseEther("100"));
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

const strayEntries = () =>
  server.ctx.store.db
    .selectFrom("ledger_entries")
    .select(["currency", "amount"])
    .where("account", "=", "operator:stray:ethereum")
    .orderBy("id")
    .execute();

/** `amount` of the token the catalog lacks sent to a new USDT invoice's forwarder, deep, and reported by its transaction. */
async function reportedStray(amount: bigint) {
  const m = await liveMerchant(server);
  const invoice = await forwarderInvoice(server, m.apiKey, { currency: "USDT", amount: "10" }, hot.address);
  const sent = await stray.transfer(payer(chain, 1), invoice.deposit_address, amount);
  await chain.waitForReceipt(sent);
  await mineAndScanAll(CONFIRMATIONS);
  const reported = await admin(server, "POST", "/stray-payments", { network: "ethereum", txHash: sent });
  expect(reported.status, reported.text).toBe(200);
  return { invoice, reported };
}

describe("stray tokens at forwarders", () => {
  it("lists a token the catalog lacks at an invoice's forwarder, moves it to the hot wallet once, ledgered until returned", async () => {
    const { invoice } = await reportedStray(parseEther("5"));
    const listed = await admin(server, "GET", `/stray-payments?invoiceId=${invoice.id}`);
    const items = listed.body.items as Record<string, any>[];
    expect(items.map((s) => [s.currency, s.token, s.amount, s.fromAddress, s.recovery])).toEqual([
      [null, stray.address.toLowerCase(), parseEther("5").toString(), payer(chain, 1), null],
    ]);
    const id = encodeURIComponent(items[0]?.id as string);
    // Asked twice (a double click, two operators): one recovery.
    const first = await admin(server, "POST", `/stray-payments/${id}/recover`);
    const again = await admin(server, "POST", `/stray-payments/${id}/recover`);
    expect([first.status, first.body.state, first.body.actor], first.text).toEqual([200, "waiting", "operator"]);
    expect(again.body).toEqual(first.body);
    const before = await stray.balanceOf(hot.address);
    await mineAndScanAll(1);
    await mineAndScanAll(CONFIRMATIONS);
    const recovered = ((await admin(server, "GET", `/stray-payments?invoiceId=${invoice.id}`)).body.items as any[])[0]
      .recovery;
    expect([recovered.state, recovered.amountMinor, typeof recovered.txHash]).toEqual([
      "recovered",
      parseEther("5").toString(),
      "string",
    ]);
    expect(await stray.balanceOf(hot.address)).toBe(before + parseEther("5"));
    expect(await stray.balanceOf(invoice.deposit_address)).toBe(0n);
    const currency = `ethereum:${stray.address.toLowerCase()}`;
    expect(await strayEntries()).toEqual([{ currency, amount: parseEther("5").toString() }]);
    // A third call once recovered: answered as it is, nothing signed again.
    const flushes = (await server.ctx.store.db.selectFrom("flushes").select("id").execute()).length;
    const third = await admin(server, "POST", `/stray-payments/${id}/recover`);
    expect([third.body.state, third.body.txHash]).toEqual(["recovered", recovered.txHash]);
    await mineAndScanAll(CONFIRMATIONS);
    expect((await server.ctx.store.db.selectFrom("flushes").select("id").execute()).length).toBe(flushes);
    expect(await stray.balanceOf(hot.address)).toBe(before + parseEther("5"));
    // Sent back by hand: the operator's stray funds go to the payouts.
    const note = { note: "returned to the sender in 0xabc" };
    const returned = await admin(server, "POST", `/stray-payments/${id}/return`, note);
    expect([returned.status, returned.body.state, returned.body.returnNote], returned.text).toEqual([
      200,
      "returned",
      note.note,
    ]);
    expect((await admin(server, "POST", `/stray-payments/${id}/return`, note)).body.state).toBe("returned");
    const entries = await strayEntries();
    expect(entries.map((e) => BigInt(e.amount))).toEqual([parseEther("5"), -parseEther("5")]);
    await auditAndExpect(server);
  });

  it("recovers ETH sent to a customer's USDT deposit address, moved as the native coin, ledgered in ETH", async () => {
    const m = await liveMerchant(server);
    const made = await merchant(server, m.apiKey, "POST", "/public/v1/deposit-addresses", {
      customer: "cust-stray",
      currency: "USDT",
    });
    expect(made.status, made.text).toBe(200);
    const address = made.body.address as Hex;
    // ETH to an address with no code yet: the recovery's flush deploys the forwarder and empties it.
    const sent = await chain.sendEth(payer(chain, 1), address, parseEther("0.25"));
    await chain.waitForReceipt(sent);
    await mineAndScanAll(CONFIRMATIONS);
    // No ETH payment is awaited, so the scanner reads no block bodies: the operator names the transaction.
    const reported = await admin(server, "POST", "/stray-payments", { network: "ethereum", txHash: sent });
    expect(reported.status, reported.text).toBe(200);
    // Again: the same stray, recorded once.
    expect((await admin(server, "POST", "/stray-payments", { network: "ethereum", txHash: sent })).body).toEqual(
      reported.body,
    );
    expect(reported.body.items.map((s: Record<string, any>) => [s.currency, s.internalTicker, s.amount])).toEqual([
      ["ETH", "ETH", "0.25"],
    ]);
    const listed = await admin(server, "GET", `/stray-payments?depositAddressId=${made.body.id}`);
    expect(listed.status, listed.text).toBe(200);
    const items = listed.body.items as Record<string, any>[];
    expect(items.map((s) => [s.depositAddressId, s.invoiceId, s.currency, s.token, s.amount])).toEqual([
      [made.body.id, null, "ETH", null, "0.25"],
    ]);
    const recovery = await admin(server, "POST", `/stray-payments/${encodeURIComponent(items[0]?.id)}/recover`);
    expect([recovery.status, recovery.body.state, recovery.body.ledgerCurrency], recovery.text).toEqual([
      200,
      "waiting",
      "ETH",
    ]);
    await mineAndScanAll(1);
    await mineAndScanAll(CONFIRMATIONS);
    const after = (await admin(server, "GET", `/stray-payments?depositAddressId=${made.body.id}`)).body.items[0];
    expect([after.recovery.state, after.recovery.amountMinor]).toEqual(["recovered", parseEther("0.25").toString()]);
    expect(await chain.client.getBalance({ address })).toBe(0n);
    const eth = (await strayEntries()).filter((e) => e.currency === "ETH");
    expect(eth).toEqual([{ currency: "ETH", amount: parseEther("0.25").toString() }]);
    await auditAndExpect(server);
  });

  it("says a recovery waits for gas while the hot wallet cannot pay for its flush, and moves it once funded", async () => {
    const { invoice, reported } = await reportedStray(parseEther("2"));
    const id = encodeURIComponent(reported.body.items[0]?.id);
    const funds = await chain.client.getBalance({ address: hot.address });
    // Drained on the node: a millionth of a coin, short of a flush's gas.
    const setHotBalance = (wei: bigint) =>
      chain.client.request({ method: "anvil_setBalance" as never, params: [hot.address, toHex(wei)] as never });
    await setHotBalance(10n ** 12n);
    expect((await admin(server, "POST", `/stray-payments/${id}/recover`)).status).toBe(200);
    await scan(server);
    const recoveryOf = async () =>
      ((await admin(server, "GET", `/stray-payments?invoiceId=${invoice.id}`)).body.items as any[])[0].recovery;
    const waiting = await recoveryOf();
    expect(waiting.state).toBe("waiting");
    expect(waiting.lastError).toMatch(/^waiting for gas: the flush needs \d+ wei of ethereum's native coin/);
    await setHotBalance(funds);
    await mineAndScanAll(1);
    expect(await recoveryOf()).toMatchObject({ state: "flushing", lastError: null });
    await mineAndScanAll(CONFIRMATIONS);
    expect(await recoveryOf()).toMatchObject({ state: "recovered", amountMinor: parseEther("2").toString() });
  });

  it("refuses an unknown stray, a stray at a derived address, a transaction with no such transfer, ETH to an ETH invoice", async () => {
    expectProblem(
      await admin(server, "POST", `/stray-payments/${encodeURIComponent("ethereum:0xdead:1")}/recover`),
      404,
      "stray_payment_not_found",
    );
    const m = await liveMerchant(server);
    const invoice = await forwarderInvoice(server, m.apiKey, { currency: "USDT", amount: "10" }, hot.address);
    await asLegacyDerivedInvoice(server, invoice.id);
    const entry = await server.ctx.store.db
      .selectFrom("currencies")
      .select("ticker")
      .where("contract_address", "=", token.address)
      .executeTakeFirstOrThrow();
    // A stray the scanner recorded at a derived address before forwarders (product §24).
    await server.ctx.store.transaction((tx) =>
      tx.db
        .insertInto("stray_payments")
        .values({
          network: "ethereum",
          tx_id: `0x${"ab".repeat(32)}:0`,
          invoice_id: invoice.id,
          currency: entry.ticker,
          amount: "1",
          from_address: payer(chain, 1),
          block_number: "1",
          block_hash: `0x${"cd".repeat(32)}`,
          created_at: new Date().toISOString(),
        })
        .execute(),
    );
    const derived = encodeURIComponent(`ethereum:0x${"ab".repeat(32)}:0`);
    expectProblem(await admin(server, "POST", `/stray-payments/${derived}/recover`), 409, "stray_not_at_forwarder");
    const plain = await chain.sendEth(payer(chain, 1), payer(chain, 2), 1n);
    await chain.waitForReceipt(plain);
    await mineAndScanAll(CONFIRMATIONS);
    const report = await admin(server, "POST", "/stray-payments", { network: "ethereum", txHash: plain });
    expectProblem(report, 404, "stray_transfer_not_found");
    // ETH to an ETH invoice's address is its payment (or nothing), never a stray: its recovery could
    // move a payment's coin not yet flushed.
    const eth = await forwarderInvoice(server, m.apiKey, { currency: "ETH", amount: "0.1" }, hot.address);
    const paid = await chain.sendEth(payer(chain, 1), eth.deposit_address, parseEther("0.1"));
    await chain.waitForReceipt(paid);
    await mineAndScanAll(CONFIRMATIONS);
    const counted = await admin(server, "POST", "/stray-payments", { network: "ethereum", txHash: paid });
    expectProblem(counted, 404, "stray_transfer_not_found");
  });
});
