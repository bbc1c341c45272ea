// The payer's page offers only the networks that take the payment (issue 42): the built-in USDC left on `ethereum`, which is not configured, and a USDC_BASE entry on Base (chain 8453, configured, its factory deployed); its invoices default to Base, never to chain 1.
import QRCode from "qrcode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { forgetRails } from "../../src/app/rails.ts";
import { payVersion } from "../../src/store/payStatus.ts";
import { type LocalChain, startLocalChain, type TestToken } from "../support/chain.ts";
import {
  CONFIRMATIONS,
  deployServiceFactory,
  depositOf,
  liveInvoice,
  liveMerchant,
  mineAndScan,
  payer,
  scan,
  startLiveServer,
  usdt,
  usdtEntry,
} from "../support/live.ts";
import { admin, call, expectProblem, merchant, type TestServer } from "../support/server.ts";

let base: LocalChain;
let token: TestToken;
let server: TestServer;

beforeAll(async () => {
  base = await startLocalChain({ chainId: 8453 });
  token = await base.deployToken({ name: "Test USD Coin", symbol: "USDC" });
  // As a new operator sets it up: Base configured and opened, the built-in catalog left as it ships.
  server = await startLiveServer(base, token, { configure: false });
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
    "/currencies/USDC_BASE",
    usdtEntry(token, {
      ticker: "USDC",
      fullName: "USD Coin",
      network: "base",
      internalTicker: "USDC_BASE",
      icon: "/icons/usdc.svg",
      iconDark: "/icons/usdc-dark.svg",
    }),
  );
  expect(entry.status, entry.text).toBe(200);
  await token.mint(payer(base, 1), usdt("100"));
}, 60_000);

afterAll(async () => {
  await server?.close();
  await base?.close();
});

const status = (id: string) => call(server.baseUrl, "GET", `/pay/${id}/status`);
const page = async (id: string) => (await fetch(`${server.baseUrl}/pay/${id}?lang=en`)).text();

describe("the payer's page of a currency on an open and a closed network", () => {
  it("offers Base alone, in USDC_BASE and in USDC: default network, payment URI, QR code and page", async () => {
    const m = await liveMerchant(server);
    for (const currency of ["USDC_BASE", "USDC"]) {
      const invoice = await liveInvoice(server, m.apiKey, { currency, amount: "10" });
      const address = await depositOf(server, invoice.id);
      const uri = `ethereum:${token.address}@8453/transfer?address=${address}&uint256=10000000`;
      const answer = await status(invoice.id);
      expect([answer.body.network, answer.body.address, answer.body.paymentUri], currency).toEqual([
        "base",
        address,
        uri,
      ]);
      expect(
        (answer.body.networks as { name: string; chainId: number; paymentUri: string }[]).map((n) => [
          n.name,
          n.chainId,
          n.paymentUri,
        ]),
      ).toEqual([["base", 8453, uri]]);
      const html = await page(invoice.id);
      expect(html).toContain("<strong>base (chain 8453)</strong>");
      expect(html).toContain("Send only USDC on the base network to this address.");
      expect(html).not.toMatch(/ethereum|chain 1\)/);
      // The QR code the page shows is the one of Base's payment URI, byte for byte.
      const qr = html.match(/src="(\/pay\/[^"]+\/qr\.svg\?[^"]+)"/)?.[1]?.replaceAll("&amp;", "&");
      const svg = await (await fetch(`${server.baseUrl}${qr}`)).text();
      expect(svg).toBe(await QRCode.toString(uri, { type: "svg", margin: 2, errorCorrectionLevel: "M" }));
    }
  });

  it("counts a Base payment's confirmations at Base's depth, and the live page follows Base's head", async () => {
    const m = await liveMerchant(server);
    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDC_BASE", amount: "10" });
    const address = await depositOf(server, invoice.id);
    await base.waitForReceipt(await token.transfer(payer(base, 1), address, usdt("10")));
    await scan(server);
    const seen = await status(invoice.id);
    expect(seen.body.payments).toMatchObject([
      { amount: "10", confirmations: 1, requiredConfirmations: CONFIRMATIONS, state: "confirming" },
    ]);
    expect(await page(invoice.id)).toContain(`1 of ${CONFIRMATIONS} confirmations`);
    // The stream's version moves with Base's head (the invoice row does not change at depth 2).
    const version = await payVersion(server.ctx.store, invoice.id);
    await mineAndScan(server, base, 1);
    expect(await payVersion(server.ctx.store, invoice.id)).not.toBe(version);
    expect((await status(invoice.id)).body.payments).toMatchObject([{ confirmations: 2 }]);
    await mineAndScan(server, base, CONFIRMATIONS);
    expect((await status(invoice.id)).body).toMatchObject({ status: "completed", paymentUri: null });
  });

  it("does not offer a ticker none of whose networks passes the gate: refused, listed, and an open invoice offers nothing", async () => {
    const m = await liveMerchant(server);
    for (const currency of ["USDT", "USDC_ERC20"]) {
      for (const path of ["create", "estimateFees"]) {
        expectProblem(
          await merchant(server, m.apiKey, "POST", `/public/v1/invoices/${path}`, { currency, amount: "10" }),
          400,
          "currency_unavailable",
        );
      }
    }
    // Currencies still lists the whole catalog (product §12): the gate decides what is payable, not what exists.
    const listed = await call(server.baseUrl, "GET", "/public/v1/currencies");
    const usdc = (listed.body as { ticker: string; internalTicker: string }[]).filter((c) => c.ticker === "USDC");
    expect(usdc.map((c) => c.internalTicker)).toEqual(["USDC_ERC20", "USDC_BASE"]);

    const invoice = await liveInvoice(server, m.apiKey, { currency: "USDC", amount: "10" });
    // Base closes as after a hot-wallet change: its recorded factory is not the current wallet's.
    const recorded = await server.ctx.store.db
      .selectFrom("networks")
      .select("factory_address")
      .where("name", "=", "base")
      .executeTakeFirstOrThrow();
    const setFactory = async (factory: string | null) => {
      await server.ctx.store.transaction((tx) =>
        tx.db.updateTable("networks").set({ factory_address: factory }).where("name", "=", "base").execute(),
      );
      forgetRails(server.ctx);
    };
    await setFactory("0x000000000000000000000000000000000000dead");
    try {
      const closed = await status(invoice.id);
      expect(closed.body).toMatchObject({ status: "pending", network: null, address: null, paymentUri: null });
      expect(closed.body.networks).toEqual([]);
      const html = await page(invoice.id);
      expect(html).toContain("No network takes this payment at the moment.");
      expect(html).not.toMatch(/0x[0-9a-fA-F]{40}|qr\.svg/);
      expect((await fetch(`${server.baseUrl}/pay/${invoice.id}/qr.svg`)).status).toBe(404);
      expectProblem(
        await merchant(server, m.apiKey, "POST", "/public/v1/invoices/create", { currency: "USDC", amount: "10" }),
        400,
        "currency_unavailable",
      );
    } finally {
      await setFactory(recorded.factory_address ?? null);
    }
    expect((await status(invoice.id)).body.network).toBe("base");
  });
});
