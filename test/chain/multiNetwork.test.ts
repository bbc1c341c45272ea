// One currency on several networks (product §23) with two local chains at once (chain ids 1 and 8453): catalog entries per network, ticker and internalTicker invoices, fees from the highest network fee, one deposit address on both chains.
import { type Hex, parseEther } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { factoryAddress, invoiceDepositAddress } from "../../src/domain/forwarders.ts";
import { type LocalChain, startLocalChain, type TestToken } from "../support/chain.ts";
import {
  auditAndExpect,
  CONFIRMATIONS,
  deployServiceFactory,
  depositOf,
  getInvoice,
  liveInvoice,
  liveMerchant,
  payer,
  scan,
  startLiveServer,
  usdt,
  usdtEntry,
} from "../support/live.ts";
import { createRefund, refundCrypto } from "../support/refunds.ts";
import { admin, call, createMerchant, expectProblem, merchant, type TestServer } from "../support/server.ts";
import { withdraw } from "../support/withdrawals.ts";

let mainnet: LocalChain;
let base: LocalChain;
let tokenMain: TestToken;
let tokenBase: TestToken;
let server: TestServer;

beforeAll(async () => {
  [mainnet, base] = await Promise.all([startLocalChain({ chainId: 1 }), startLocalChain({ chainId: 8453 })]);
  [tokenMain, tokenBase] = await Promise.all([mainnet.deployToken(), base.deployToken()]);
  server = await startLiveServer(mainnet, tokenMain);
  const network = await admin(server, "PUT", "/networks/base", {
    chainId: 8453,
    rpcUrl: base.url,
    confirmations: CONFIRMATIONS,
  });
  expect(network.status, network.text).toBe(200);
  await deployServiceFactory(server, base, "base");
  const entry = await admin(
    server,
    "PUT",
    "/currencies/USDT_BASE",
    usdtEntry(tokenBase, { ticker: "USDT", network: "base", internalTicker: "USDT_BASE", networkFee: "2" }),
  );
  expect(entry.status, entry.text).toBe(200);
  await tokenMain.mint(payer(mainnet, 1), usdt("1000"));
  await tokenBase.mint(payer(base, 1), usdt("1000"));
  await scan(server);
}, 90_000);

afterAll(async () => {
  await server?.close();
  await Promise.all([mainnet?.close(), base?.close()]);
});

/** The merchant's USDT balances, one row per entry. */
async function entryBalances(merchantId: string): Promise<string[][]> {
  const rows = await admin(server, "GET", `/merchants/${merchantId}/balances`);
  return (rows.body as { currency: string; internalTicker: string; network: string; available: string }[])
    .filter((b) => b.currency === "USDT")
    .map((b) => [b.currency, b.internalTicker, b.network, b.available]);
}

async function mineBothAndScan(blocks: number): Promise<void> {
  await Promise.all([mainnet.mine(blocks), base.mine(blocks)]);
  for (let i = 0; i < 10; i++) if ((await scan(server)) === 0) return;
}

describe("one currency on two networks", () => {
  it("lists an entry per network under one ticker, and the operator names each by its internalTicker", async () => {
    const list = await merchant(server, "", "GET", "/public/v1/currencies");
    const usdtEntries = (list.body as { ticker: string; internalTicker: string; network: string }[])
      .filter((c) => c.ticker === "USDT")
      .map((c) => [c.internalTicker, c.network]);
    expect(usdtEntries).toEqual([
      ["USDT_ERC20", "ethereum"],
      ["USDT_BASE", "base"],
    ]);
    expectProblem(await admin(server, "PUT", "/currencies/USDT", usdtEntry(tokenMain)), 400, "ambiguous_currency");
    const again = await admin(server, "PUT", "/currencies/USDT_ERC20", usdtEntry(tokenMain));
    expect([again.status, again.body.ticker, again.body.internalTicker]).toEqual([200, "USDT", "USDT_ERC20"]);
    const taken = await admin(
      server,
      "PUT",
      "/currencies/USDT_POLYGON",
      usdtEntry(tokenBase, { ticker: "USDT", network: "base", internalTicker: "USDT_BASE" }),
    );
    expectProblem(taken, 400, "invalid_currency");
  });

  it("prices a ticker invoice with the highest network fee, as EstimateFees says, and an internalTicker one with its own", async () => {
    const m = await liveMerchant(server);
    for (const [currency, fee] of [
      ["USDT", "2"],
      ["USDT_BASE", "2"],
      ["USDT_ERC20", "1"],
    ] as const) {
      const estimate = await merchant(server, m.apiKey, "POST", "/public/v1/invoices/estimateFees", {
        currency,
        amount: "50",
      });
      expect(estimate.status, estimate.text).toBe(200);
      const invoice = await liveInvoice(server, m.apiKey, { currency, amount: "50" });
      expect([invoice.network_and_other_fees, invoice.merchant_receive_amount]).toEqual([
        fee,
        String(50 - Number(fee)),
      ]);
      expect(estimate.body.merchantReceiveAmount).toBe(Number(invoice.merchant_receive_amount));
      expect(estimate.body.summaryFee).toBe(Number(invoice.network_and_other_fees) + Number(invoice.merchant_fee));
    }
  });

  it("completes a ticker invoice paid partly on each network, to one deposit address offered on both", async () => {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "10" });
    const address = await depositOf(server, invoice.id);
    const status = await call(server.baseUrl, "GET", `/pay/${invoice.id}/status`);
    expect(
      (status.body.networks as { name: string; chainId: number; internalTicker: string; paymentUri: string }[]).map(
        (n) => [
          n.name,
          n.chainId,
          n.internalTicker,
          n.paymentUri.includes(`@${n.chainId}/transfer?address=${address}`),
        ],
      ),
    ).toEqual([
      ["ethereum", 1, "USDT_ERC20", true],
      ["base", 8453, "USDT_BASE", true],
    ]);
    // The payer's page offers the other network as a plain link; there, its QR code and warning.
    const page = await (await fetch(`${server.baseUrl}/pay/${invoice.id}?lang=en`)).text();
    expect(page).toContain(`href="/pay/${invoice.id}?network=base&amp;lang=en"`);
    const onBase = await (await fetch(`${server.baseUrl}/pay/${invoice.id}?network=base&lang=en`)).text();
    expect(onBase).toContain("Send only USDT on the base network to this address.");
    expect(onBase).toContain(`data-network="ethereum"`);
    const qr = onBase.match(/src="(\/pay\/[^"]+\/qr\.svg\?[^"]+)"/)?.[1]?.replaceAll("&amp;", "&");
    expect(qr).toContain("network=base");
    const svg = await fetch(`${server.baseUrl}${qr}`);
    expect([svg.status, svg.headers.get("content-type")]).toEqual([200, "image/svg+xml"]);
    await mainnet.waitForReceipt(await tokenMain.transfer(payer(mainnet, 1), address, usdt("4")));
    await base.waitForReceipt(await tokenBase.transfer(payer(base, 1), address, usdt("6")));
    await scan(server);
    const seen = await getInvoice(server, m.apiKey, invoice.id);
    expect([seen.status, seen.paid_amount]).toEqual(["processing", "10"]);
    await mineBothAndScan(CONFIRMATIONS);
    expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("completed");
    // Balances per entry: 10 less the network fee (2), taken from the larger share (Base's 6).
    expect(await entryBalances(m.id)).toEqual([
      ["USDT", "USDT_ERC20", "ethereum", "4"],
      ["USDT", "USDT_BASE", "base", "4"],
    ]);
    await auditAndExpect(server);
  });

  it("gives the invoice one forwarder address on chains 1 and 8453: the factory's there, no code, no key from the mnemonic", async () => {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "10" });
    const address = await depositOf(server, invoice.id);
    const wallet = server.ctx.wallet;
    if (!wallet) throw new Error("no wallet");
    // The same computation for both networks: nothing in it depends on a chain.
    expect(address).toBe(invoiceDepositAddress(wallet.hotAddress, invoice.id));
    const factory = factoryAddress(wallet.hotAddress);
    for (const chain of [mainnet, base]) {
      const factoryCode = await chain.client.getCode({ address: factory });
      expect(factoryCode !== undefined && factoryCode !== "0x").toBe(true);
      expect(await chain.client.getCode({ address })).toBeUndefined();
    }
    const networks = await admin(server, "GET", "/networks");
    expect(
      (networks.body as { network: string; factoryAddress: string; factoryDeployed: boolean }[]).map((n) => [
        n.network,
        n.factoryAddress,
        n.factoryDeployed,
      ]),
    ).toEqual([
      ["base", factory, true],
      ["ethereum", factory, true],
    ]);
    const derived = new Set(
      Array.from({ length: 200 }, (_, i) => (wallet.deposits?.address(i + 1) ?? "").toLowerCase()),
    );
    expect(derived.has(address.toLowerCase())).toBe(false);
  });

  it("adjusts one entry's balance, named by its internalTicker; a ticker with several entries is ambiguous", async () => {
    const m = await liveMerchant(server);
    const adjust = (currency: string) =>
      admin(server, "POST", `/merchants/${m.id}/balance-adjustments`, { currency, amount: "3", memo: "test" });
    const ambiguous = await adjust("USDT");
    expectProblem(ambiguous, 400, "ambiguous_currency");
    expect(ambiguous.body.detail).toBe("USDT has several entries: name one by its internalTicker.");
    expect(ambiguous.body.errors).toEqual([{ pointer: "/currency", detail: "names several entries" }]);
    expect((await adjust("USDT_BASE")).status).toBe(200);
    expect(await entryBalances(m.id)).toEqual([
      ["USDT", "USDT_ERC20", "ethereum", "0"],
      ["USDT", "USDT_BASE", "base", "3"],
    ]);
    await auditAndExpect(server);
  });

  it("does not count a payment on another network than an internalTicker invoice's", async () => {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT_BASE", amount: "10" });
    const address = await depositOf(server, invoice.id);
    const status = await call(server.baseUrl, "GET", `/pay/${invoice.id}/status`);
    expect((status.body.networks as { name: string }[]).map((n) => n.name)).toEqual(["base"]);
    const strayBefore = await strayGauge("ethereum");
    const sent = await tokenMain.transfer(payer(mainnet, 1), address, usdt("10"));
    await mainnet.waitForReceipt(sent);
    await mineBothAndScan(CONFIRMATIONS);
    const ignored = await getInvoice(server, m.apiKey, invoice.id);
    expect([ignored.status, ignored.paid_amount]).toEqual(["pending", "0"]);
    // The operator sees it as stray (listed and counted), never credited.
    const stray = await admin(server, "GET", `/stray-payments?invoiceId=${invoice.id}`);
    expect(stray.status, stray.text).toBe(200);
    expect(
      (stray.body.items as Record<string, unknown>[]).map((p) => [
        p.network,
        p.currency,
        p.internalTicker,
        p.amount,
        p.fromAddress,
        String(p.txId).startsWith(sent),
      ]),
    ).toEqual([["ethereum", "USDT", "USDT_ERC20", "10", payer(mainnet, 1), true]]);
    expect(await strayGauge("ethereum")).toBe(strayBefore + 1);
    // The operator's view of the invoice shows it too: network, transaction, entry, amount, sender, when.
    const view = await admin(server, "GET", `/invoices/${invoice.id}`);
    expect(view.status, view.text).toBe(200);
    expect([view.body.merchantId, view.body.invoice.id, view.body.invoice.paid_amount]).toEqual([
      m.id,
      invoice.id,
      "0",
    ]);
    expect(
      (view.body.strayPayments as Record<string, unknown>[]).map((p) => [
        p.network,
        String(p.txId).startsWith(sent),
        p.currency,
        p.internalTicker,
        p.amount,
        p.fromAddress,
        typeof p.createdAt,
      ]),
    ).toEqual([["ethereum", true, "USDT", "USDT_ERC20", "10", payer(mainnet, 1), "string"]]);
    expectProblem(await admin(server, "GET", "/invoices/inv_unknown"), 404, "invoice_not_found");
    await base.waitForReceipt(await tokenBase.transfer(payer(base, 1), address, usdt("10")));
    await mineBothAndScan(CONFIRMATIONS);
    const paid = await getInvoice(server, m.apiKey, invoice.id);
    expect([paid.status, paid.paid_amount]).toEqual(["completed", "10"]);
    await auditAndExpect(server);
  });

  it("pays a withdrawal through a USDT_BASE method out on Base only, debiting that entry", async () => {
    const m = await liveMerchant(server);
    const dest = "0x00000000000000000000000000000000000b45e1" as Hex;
    await admin(server, "POST", `/merchants/${m.id}/balance-adjustments`, {
      currency: "USDT_BASE",
      amount: "50",
      memo: "t",
    });
    const methodOf = (currency: string) =>
      admin(server, "POST", `/merchants/${m.id}/withdrawal-methods`, { currency, address: dest });
    expectProblem(await methodOf("USDT"), 400, "ambiguous_currency");
    const method = await methodOf("USDT_BASE");
    expect(method.status, method.text).toBe(200);
    // Answered as balances are: the ticker, beside the entry's internalTicker and network.
    const entryOf = (b: Record<string, unknown>) => [b.currency, b.internalTicker, b.network];
    expect(entryOf(method.body)).toEqual(["USDT", "USDT_BASE", "base"]);
    const listed = await admin(server, "GET", `/merchants/${m.id}/withdrawal-methods`);
    expect((listed.body as Record<string, unknown>[]).map(entryOf)).toEqual([["USDT", "USDT_BASE", "base"]]);
    const hot = server.ctx.wallet?.hotAddress as Hex;
    await base.waitForReceipt(await base.sendEth(payer(base, 2), hot, parseEther("1")));
    await base.waitForReceipt(await tokenBase.mint(hot, usdt("100")));
    const other = await withdraw(
      server,
      { ...m, methodId: method.body.id as number },
      { currency: "USDC", amount: "20" },
    );
    expectProblem(other.answer, 400, "withdrawal_method_currency_mismatch");
    const w = await withdraw(server, { ...m, methodId: method.body.id as number }, { currency: "USDT", amount: "20" });
    expect(w.answer.status, w.answer.text).toBe(200);
    // The interface names the ticker; the method's entry is what is debited and paid out.
    expect([w.answer.body.request.currency, w.answer.body.request.amount]).toEqual(["USDT", "20"]);
    const payouts = server.workers.loops.chainPayouts;
    if (!payouts) throw new Error("no chain payout loop");
    for (let round = 0; round < 10 && (await tokenBase.balanceOf(dest)) === 0n; round++) {
      await payouts.runOnce();
      await base.mine(1);
    }
    expect(await tokenBase.balanceOf(dest)).toBe(usdt("20"));
    expect(await tokenMain.balanceOf(dest)).toBe(0n);
    expect(await entryBalances(m.id)).toEqual([
      ["USDT", "USDT_ERC20", "ethereum", "0"],
      ["USDT", "USDT_BASE", "base", "30"],
    ]);
    await auditAndExpect(server);
  });

  it("counts a payment on an entry with more decimals to the currency's precision, the dust to the operator", async () => {
    const [daiMain, daiBase] = await Promise.all([
      mainnet.deployToken({ symbol: "DAI", decimals: 6 }),
      base.deployToken({ symbol: "DAI", decimals: 18 }),
    ]);
    const dai = { ticker: "DAI", fullName: "Dai", icon: "/icons/usdt.svg", iconDark: "/icons/usdt-dark.svg" };
    const first = await admin(
      server,
      "PUT",
      "/currencies/DAI",
      usdtEntry(daiMain, { ...dai, internalTicker: "DAI_ERC20" }),
    );
    expect(first.status, first.text).toBe(200);
    const fewer = await admin(
      server,
      "PUT",
      "/currencies/DAI_BASE",
      usdtEntry({ address: daiBase.address, decimals: 4 }, { ...dai, network: "base", internalTicker: "DAI_BASE" }),
    );
    // An entry with fewer decimals than the first is taken: the ticker's precision follows it (and its
    // decimals may change until money moves in it).
    expect(fewer.status, fewer.text).toBe(200);
    const more = await admin(
      server,
      "PUT",
      "/currencies/DAI_BASE",
      usdtEntry(daiBase, { ...dai, network: "base", internalTicker: "DAI_BASE" }),
    );
    expect(more.status, more.text).toBe(200);
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "DAI", amount: "10" });
    const address = await depositOf(server, invoice.id);
    const wei = 10n * 10n ** 18n + 123n;
    await daiBase.mint(payer(base, 1), wei);
    await base.waitForReceipt(await daiBase.transfer(payer(base, 1), address, wei));
    await mineBothAndScan(CONFIRMATIONS);
    const paid = await getInvoice(server, m.apiKey, invoice.id);
    expect([paid.status, paid.paid_amount]).toEqual(["completed", "10"]);
    const dust = await server.ctx.store.db
      .selectFrom("ledger_entries")
      .select(["currency", "amount"])
      .where("account", "=", "operator:dust")
      .execute();
    expect(dust).toEqual([{ currency: "DAI_BASE", amount: "123" }]);
    // 10 DAI less the network fee (1), in DAI_BASE's own units.
    const balances = await admin(server, "GET", `/merchants/${m.id}/balances`);
    expect(
      (balances.body as { internalTicker: string; available: string }[]).find((b) => b.internalTicker === "DAI_BASE")
        ?.available,
    ).toBe("9");
    // Refunded on Base in DAI_BASE's own units: the 10 paid (the dust stays the operator's).
    await admin(server, "POST", `/merchants/${m.id}/balance-adjustments`, {
      currency: "DAI_BASE",
      amount: "1",
      memo: "t",
    });
    const hot = server.ctx.wallet?.hotAddress as Hex;
    await base.waitForReceipt(await base.sendEth(payer(base, 2), hot, parseEther("1")));
    await base.waitForReceipt(await daiBase.mint(hot, 20n * 10n ** 18n));
    const dest = "0x00000000000000000000000000000000000da1b5" as Hex;
    const refund = await refundCrypto(server, m, { invoiceId: invoice.id, address: dest });
    expect(refund.answer.status, refund.answer.text).toBe(200);
    expect([refund.answer.body.request.currency, refund.answer.body.request.amount]).toEqual(["DAI", "10"]);
    const payouts = server.workers.loops.chainPayouts;
    if (!payouts) throw new Error("no chain payout loop");
    for (let round = 0; round < 10 && (await daiBase.balanceOf(dest)) === 0n; round++) {
      await payouts.runOnce();
      await base.mine(1);
    }
    expect([await daiBase.balanceOf(dest), await daiMain.balanceOf(dest)]).toEqual([10n * 10n ** 18n, 0n]);
    await auditAndExpect(server);
  });

  it("prices and counts at the ticker's precision when a further entry has fewer decimals than the first", async () => {
    // The first entry has 18 decimals (BSC-like), the further one 6: the precision is 6.
    const { mainToken, baseToken } = await currencyOnTwo("XUSD", 18, 6);
    const m = await createMerchant(server, { feePercent: "1.5" });
    for (const path of ["/public/v1/invoices/estimateFees", "/public/v1/invoices/create"]) {
      const tooPrecise = await merchant(server, m.apiKey, "POST", path, { currency: "XUSD", amount: "10.1234567" });
      expectProblem(tooPrecise, 400, "amount_too_precise");
    }
    const estimate = await merchant(server, m.apiKey, "POST", "/public/v1/invoices/estimateFees", {
      currency: "XUSD",
      amount: "10.123456",
    });
    expect(estimate.status, estimate.text).toBe(200);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "XUSD", amount: "10.123456" });
    // 1.5 % of 10.123456 is 0.15185184: 0.151852 at the precision, as EstimateFees says.
    expect([invoice.merchant_fee, invoice.network_and_other_fees, invoice.merchant_receive_amount]).toEqual([
      "0.151852",
      "1",
      "8.971604",
    ]);
    expect([estimate.body.fee, estimate.body.merchantReceiveAmount]).toEqual([0.151852, 8.971604]);
    // 10.1234567890123 on the 18-decimal entry: 10.123456 counted, the rest the operator's dust.
    const address = await depositOf(server, invoice.id);
    const wei = 10_123_456_789_012_300_000n;
    await mainToken.mint(payer(mainnet, 1), wei);
    await mainnet.waitForReceipt(await mainToken.transfer(payer(mainnet, 1), address, wei));
    await mineBothAndScan(CONFIRMATIONS);
    const paid = await getInvoice(server, m.apiKey, invoice.id);
    expect([paid.status, paid.paid_amount]).toEqual(["completed", "10.123456"]);
    const dust = await server.ctx.store.db
      .selectFrom("ledger_entries")
      .select(["currency", "amount"])
      .where("account", "=", "operator:dust")
      .where("currency", "like", "XUSD%")
      .execute();
    expect(dust).toEqual([{ currency: "XUSD", amount: "789012300000" }]);
    // A second invoice paid on the 6-decimal entry: credited there, exactly.
    const second = await liveInvoice(server, m.apiKey, { currency: "XUSD", amount: "5" });
    const status = await call(server.baseUrl, "GET", `/pay/${second.id}/status`);
    expect((status.body.networks as { paymentUri: string }[]).map((n) => n.paymentUri.split("uint256=")[1])).toEqual([
      "5000000000000000000",
      "5000000",
    ]);
    await baseToken.mint(payer(base, 1), 5_000_000n);
    await base.waitForReceipt(await baseToken.transfer(payer(base, 1), await depositOf(server, second.id), 5_000_000n));
    await mineBothAndScan(CONFIRMATIONS);
    expect((await getInvoice(server, m.apiKey, second.id)).status).toBe("completed");
    // An overpayment of 1 on the 6-decimal entry after completion is credited there too.
    await baseToken.mint(payer(base, 1), 1_000_000n);
    await base.waitForReceipt(await baseToken.transfer(payer(base, 1), await depositOf(server, second.id), 1_000_000n));
    await mineBothAndScan(CONFIRMATIONS);
    const balances = await admin(server, "GET", `/merchants/${m.id}/balances`);
    expect(
      (balances.body as { currency: string; internalTicker: string; available: string }[])
        .filter((b) => b.currency === "XUSD")
        .map((b) => [b.internalTicker, b.available]),
    ).toEqual([
      // 10.123456 less 0.151852 and 1; 5 less 0.075 and 1, and the overpayment of 1.
      ["XUSD", "8.971604"],
      ["XUSD_BASE", "4.925"],
    ]);
    await auditAndExpect(server);
  });

  it("credits an overpayment and refunds on the network the payment came on, from that entry's balance", async () => {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "10" });
    const address = await depositOf(server, invoice.id);
    await base.waitForReceipt(await tokenBase.transfer(payer(base, 1), address, usdt("10")));
    await mineBothAndScan(CONFIRMATIONS);
    expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("completed");
    // An overpayment on Base after completion is credited in USDT_BASE too.
    await base.waitForReceipt(await tokenBase.transfer(payer(base, 1), address, usdt("1")));
    await mineBothAndScan(CONFIRMATIONS);
    expect((await entryBalances(m.id))[1]).toEqual(["USDT", "USDT_BASE", "base", "9"]);
    // 9 credited in USDT_BASE (11 less the network fee 2); the refund returns the 11 paid.
    await admin(server, "POST", `/merchants/${m.id}/balance-adjustments`, {
      currency: "USDT_BASE",
      amount: "2",
      memo: "t",
    });
    const hot = server.ctx.wallet?.hotAddress as Hex;
    await base.waitForReceipt(await base.sendEth(payer(base, 2), hot, parseEther("1")));
    await base.waitForReceipt(await tokenBase.mint(hot, usdt("100")));
    const dest = "0x00000000000000000000000000000000000f00d1" as Hex;
    const refund = await refundCrypto(server, m, {
      invoiceId: invoice.id,
      address: dest,
      withdrawToSameAddress: false,
    });
    expect(refund.answer.status, refund.answer.text).toBe(200);
    expect([refund.answer.body.request.currency, refund.answer.body.request.amount]).toEqual(["USDT", "11"]);
    const payouts = server.workers.loops.chainPayouts;
    if (!payouts) throw new Error("no chain payout loop");
    for (let round = 0; round < 10 && (await tokenBase.balanceOf(dest)) === 0n; round++) {
      await payouts.runOnce();
      await base.mine(1);
    }
    expect(await tokenBase.balanceOf(dest)).toBe(usdt("11"));
    expect(await tokenMain.balanceOf(dest)).toBe(0n);
    expect(await entryBalances(m.id)).toEqual([
      ["USDT", "USDT_ERC20", "ethereum", "0"],
      ["USDT", "USDT_BASE", "base", "0"],
    ]);
    await auditAndExpect(server);
  });

  it("refuses a crypto refund, whole or partial, of an invoice paid on two networks", async () => {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "10" });
    const address = await depositOf(server, invoice.id);
    await mainnet.waitForReceipt(await tokenMain.transfer(payer(mainnet, 1), address, usdt("5")));
    await base.waitForReceipt(await tokenBase.transfer(payer(base, 1), address, usdt("5")));
    await mineBothAndScan(CONFIRMATIONS);
    expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("completed");
    const dest = "0x00000000000000000000000000000000000f00d2";
    const whole = await refundCrypto(server, m, { invoiceId: invoice.id, address: dest });
    expectProblem(whole.answer, 400, "payments_on_several_networks");
    const part = await createRefund(server, m, { invoiceId: invoice.id, type: "crypto", amount: "3", address: dest });
    expectProblem(part.answer, 400, "payments_on_several_networks");
    expect(await refundRows(invoice.id)).toEqual([]);
    await auditAndExpect(server);
  });

  it("counts a late payment on another network in the refund's choice: several networks, refused", async () => {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "10" });
    const address = await depositOf(server, invoice.id);
    await mainnet.waitForReceipt(await tokenMain.transfer(payer(mainnet, 1), address, usdt("10")));
    await mineBothAndScan(CONFIRMATIONS);
    expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("completed");
    // An overpayment on Base after completion: credited in USDT_BASE, and part of what a refund returns.
    await base.waitForReceipt(await tokenBase.transfer(payer(base, 1), address, usdt("3")));
    await mineBothAndScan(CONFIRMATIONS);
    expect((await entryBalances(m.id))[1]).toEqual(["USDT", "USDT_BASE", "base", "3"]);
    const dest = "0x00000000000000000000000000000000000f00d5";
    const whole = await refundCrypto(server, m, { invoiceId: invoice.id, address: dest });
    expectProblem(whole.answer, 400, "payments_on_several_networks");
    const part = await createRefund(server, m, { invoiceId: invoice.id, type: "crypto", amount: "3", address: dest });
    expectProblem(part.answer, 400, "payments_on_several_networks");
    expect(await refundRows(invoice.id)).toEqual([]);
    await auditAndExpect(server);
  });

  it("pays a partial refund of a Base payment out on Base, debiting USDT_BASE", async () => {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "10" });
    const address = await depositOf(server, invoice.id);
    await base.waitForReceipt(await tokenBase.transfer(payer(base, 1), address, usdt("10")));
    await mineBothAndScan(CONFIRMATIONS);
    expect((await getInvoice(server, m.apiKey, invoice.id)).status).toBe("completed");
    expect((await entryBalances(m.id))[1]).toEqual(["USDT", "USDT_BASE", "base", "8"]);
    await fundHotOnBase();
    const dest = "0x00000000000000000000000000000000000f00d3" as Hex;
    const part = await createRefund(server, m, {
      invoiceId: invoice.id,
      type: "crypto",
      amount: "5",
      address: dest,
      networkFeePaidBy: "merchant",
    });
    expect(part.answer.status, part.answer.text).toBe(200);
    expect(part.answer.body.request.currency).toBe("USDT");
    await payOutUntil(dest);
    expect([await tokenBase.balanceOf(dest), await tokenMain.balanceOf(dest)]).toEqual([usdt("5"), 0n]);
    // 5 refunded and Base's network fee (2) paid by the merchant, from USDT_BASE only.
    expect(await entryBalances(m.id)).toEqual([
      ["USDT", "USDT_ERC20", "ethereum", "0"],
      ["USDT", "USDT_BASE", "base", "1"],
    ]);
    expect(await refundRows(invoice.id)).toEqual([["USDT_BASE", "USDT_BASE"]]);
    await auditAndExpect(server);
  });

  it("resolves late payments on Base in USDT_BASE: a refund paid out on Base, an acceptance credited there", async () => {
    const m = await liveMerchant(server);
    const expiresAt = new Date(Date.now() + 3000).toISOString();
    const refunded = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "10", expiresAt });
    const accepted = await liveInvoice(server, m.apiKey, { currency: "USDT", amount: "10", expiresAt });
    await new Promise((resolve) => setTimeout(resolve, Date.parse(expiresAt) - Date.now() + 1100));
    await mineBothAndScan(1);
    await server.workers.loops.expiry?.runOnce();
    for (const id of [refunded.id, accepted.id])
      expect((await getInvoice(server, m.apiKey, id)).status).toBe("expired");
    for (const id of [refunded.id, accepted.id]) {
      const late = await depositOf(server, id);
      await base.waitForReceipt(await tokenBase.transfer(payer(base, 1), late, usdt("6")));
    }
    await mineBothAndScan(CONFIRMATIONS);
    await fundHotOnBase();
    const dest = "0x00000000000000000000000000000000000f00d4" as Hex;
    const refund = await admin(server, "POST", `/invoices/${refunded.id}/resolve`, { action: "refund", address: dest });
    expect(refund.status, refund.text).toBe(200);
    await payOutUntil(dest);
    // 6 less Base's network fee (2), on Base.
    expect([await tokenBase.balanceOf(dest), await tokenMain.balanceOf(dest)]).toEqual([usdt("4"), 0n]);
    expect(await refundRows(refunded.id)).toEqual([["USDT_BASE", "USDT_BASE"]]);
    const accept = await admin(server, "POST", `/invoices/${accepted.id}/resolve`, { action: "accept" });
    expect(accept.status, accept.text).toBe(200);
    // 6 less Base's network fee (2), credited in USDT_BASE (the merchant pays no fee).
    expect(await entryBalances(m.id)).toEqual([
      ["USDT", "USDT_ERC20", "ethereum", "0"],
      ["USDT", "USDT_BASE", "base", "4"],
    ]);
    await auditAndExpect(server);
  });

  it("resolves late payments on an entry with more decimals in that entry: a refund on Base, an acceptance credited there", async () => {
    const { baseToken } = await currencyOnTwo("EUSD", 6, 18);
    const m = await liveMerchant(server);
    const expiresAt = new Date(Date.now() + 3000).toISOString();
    const refunded = await liveInvoice(server, m.apiKey, { currency: "EUSD", amount: "10", expiresAt });
    const accepted = await liveInvoice(server, m.apiKey, { currency: "EUSD", amount: "10", expiresAt });
    await new Promise((resolve) => setTimeout(resolve, Date.parse(expiresAt) - Date.now() + 1100));
    await mineBothAndScan(1);
    await server.workers.loops.expiry?.runOnce();
    // 6 EUSD and 123 units of dust each, on the 18-decimal entry.
    const wei = 6n * 10n ** 18n + 123n;
    await baseToken.mint(payer(base, 1), 2n * wei);
    for (const id of [refunded.id, accepted.id])
      await base.waitForReceipt(await baseToken.transfer(payer(base, 1), await depositOf(server, id), wei));
    await mineBothAndScan(CONFIRMATIONS);
    const hot = server.ctx.wallet?.hotAddress as Hex;
    await base.waitForReceipt(await base.sendEth(payer(base, 2), hot, parseEther("1")));
    await base.waitForReceipt(await baseToken.mint(hot, 20n * 10n ** 18n));
    const dest = "0x00000000000000000000000000000000000f00d6" as Hex;
    const refund = await admin(server, "POST", `/invoices/${refunded.id}/resolve`, { action: "refund", address: dest });
    expect(refund.status, refund.text).toBe(200);
    const payouts = server.workers.loops.chainPayouts;
    if (!payouts) throw new Error("no chain payout loop");
    for (let round = 0; round < 10 && (await baseToken.balanceOf(dest)) === 0n; round++) {
      await payouts.runOnce();
      await base.mine(1);
    }
    // 6 less the entry's network fee (1), on Base in its 18-decimal units.
    expect(await baseToken.balanceOf(dest)).toBe(5n * 10n ** 18n);
    expect(await refundRows(refunded.id)).toEqual([["EUSD_BASE", "EUSD_BASE"]]);
    const accept = await admin(server, "POST", `/invoices/${accepted.id}/resolve`, { action: "accept" });
    expect(accept.status, accept.text).toBe(200);
    const balances = await admin(server, "GET", `/merchants/${m.id}/balances`);
    expect(
      (balances.body as { currency: string; internalTicker: string; available: string }[])
        .filter((b) => b.currency === "EUSD")
        .map((b) => [b.internalTicker, b.available]),
    ).toEqual([
      ["EUSD", "0"],
      ["EUSD_BASE", "5"],
    ]);
    await auditAndExpect(server);
  });

  it("forgets a stray payment whose block a reorganisation replaced", async () => {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDT_BASE", amount: "10" });
    const address = await depositOf(server, invoice.id);
    const strays = async () =>
      ((await admin(server, "GET", `/stray-payments?invoiceId=${invoice.id}`)).body.items as unknown[]).length;
    const snapshot = await mainnet.snapshot();
    await mainnet.waitForReceipt(await tokenMain.transfer(payer(mainnet, 1), address, usdt("3")));
    await scan(server);
    expect(await strays()).toBe(1);
    await mainnet.revert(snapshot);
    await mainnet.mine(2);
    await scan(server);
    expect(await strays()).toBe(0);
    expect((await getInvoice(server, m.apiKey, invoice.id)).paid_amount).toBe("0");
    await auditAndExpect(server);
  });
});

/** The operator's count of stray payments on `network` (/metrics). */
async function strayGauge(network: string): Promise<number> {
  const answer = await call(server.baseUrl, "GET", "/metrics", {
    headers: { authorization: `Bearer ${server.adminToken}` },
  });
  expect(answer.status, answer.text).toBe(200);
  const series = `payments_chain_stray_payments{network="${network}"} `;
  const line = answer.text.split("\n").find((l) => l.startsWith(series));
  return Number(line?.slice(series.length) ?? "NaN");
}

/**
 * A currency `ticker` with a first entry on Ethereum (`mainDecimals`) and `<ticker>_BASE` on Base
 * (`baseDecimals`), each a fresh token; network fee 1.
 */
async function currencyOnTwo(ticker: string, mainDecimals: number, baseDecimals: number) {
  const [mainToken, baseToken] = await Promise.all([
    mainnet.deployToken({ symbol: ticker, decimals: mainDecimals }),
    base.deployToken({ symbol: ticker, decimals: baseDecimals }),
  ]);
  const fields = { ticker, fullName: ticker, icon: "/icons/usdt.svg", iconDark: "/icons/usdt-dark.svg" };
  const first = await admin(
    server,
    "PUT",
    `/currencies/${ticker}`,
    usdtEntry(mainToken, { ...fields, internalTicker: ticker }),
  );
  expect(first.status, first.text).toBe(200);
  const other = await admin(
    server,
    "PUT",
    `/currencies/${ticker}_BASE`,
    usdtEntry(baseToken, { ...fields, network: "base", internalTicker: `${ticker}_BASE` }),
  );
  expect(other.status, other.text).toBe(200);
  await scan(server);
  return { mainToken, baseToken };
}

/** Gas and tokens for the hot wallet on Base. */
async function fundHotOnBase(): Promise<void> {
  const hot = server.ctx.wallet?.hotAddress as Hex;
  await base.waitForReceipt(await base.sendEth(payer(base, 2), hot, parseEther("1")));
  await base.waitForReceipt(await tokenBase.mint(hot, usdt("100")));
}

/** Runs the chain payout loop until `dest` holds Base tokens (bounded). */
async function payOutUntil(dest: Hex): Promise<void> {
  const payouts = server.workers.loops.chainPayouts;
  if (!payouts) throw new Error("no chain payout loop");
  for (let round = 0; round < 10 && (await tokenBase.balanceOf(dest)) === 0n; round++) {
    await payouts.runOnce();
    await base.mine(1);
  }
}

/** The invoice's refunds as [currency, debit currency] (the catalog entry keys). */
async function refundRows(invoiceId: string): Promise<string[][]> {
  const rows = await server.ctx.store.db
    .selectFrom("refunds")
    .select(["currency", "debit_currency"])
    .where("invoice_id", "=", invoiceId)
    .execute();
  return rows.map((r) => [r.currency, r.debit_currency]);
}
