// Refund claim links (product §25): a claim refund is debited at once, its page takes the payer's address, it is claimed once, and an unclaimed one returns to the merchant with refund.expired.
import { describe, expect, it } from "vitest";
import { recordFactoryDeployed } from "../../src/store/factoryDeployments.ts";
import { insertHotTransaction } from "../../src/store/hotTransactions.ts";
import { putNetwork, takeHotNonce } from "../../src/store/networks.ts";
import { nowIso } from "../../src/store/store.ts";
import { useTestServer } from "../support/fixture.ts";
import { balances, expectHealthyLedger } from "../support/invoices.ts";
import {
  adjust,
  completedInvoice,
  feeFreeMerchant,
  invoiceStatus,
  payoutOutcome,
  type RefundMerchant,
} from "../support/refunds.ts";
import { call, expectProblem, merchant } from "../support/server.ts";
import { signedCall } from "../support/signing.ts";

const server = useTestServer();

const PAYER = "0x70997970c51812dc3a010c7d01b50e0d17dc79c8";
const PAYER_CHECKSUMMED = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";

async function paidInvoice(): Promise<{ m: RefundMerchant; invoiceId: string }> {
  const m = await feeFreeMerchant(server);
  const invoice = await completedInvoice(server, m, { currency: "USDT", amount: "100" }, [{ fromAddress: "0xpayer" }]);
  await adjust(server, m.id, "USDT", "10");
  return { m, invoiceId: invoice.id };
}

async function claimRefund(m: RefundMerchant, invoiceId: string, amount: string) {
  const { answer, requestId } = await signedCall(server.baseUrl, {
    apiKey: m.apiKey,
    secret: m.secretKey,
    path: "/public/v1/refunds/create",
    body: { invoiceId, type: "crypto", amount, claim: true },
  });
  expect(answer.status).toBe(200);
  const url = new URL(answer.body.claimUrl);
  expect(url.origin).toBe(server.config.publicBaseUrl);
  expect(url.pathname).toMatch(/^\/refund\/[A-Za-z0-9_-]{43}$/);
  return { requestId, path: url.pathname, answer };
}

async function eventTypes(m: RefundMerchant): Promise<string[]> {
  const events = await merchant(server, m.apiKey, "GET", "/public/v1/events?limit=100");
  expect(events.status).toBe(200);
  return events.body.data.map((e: { type: string }) => e.type);
}

async function claimState(requestId: string) {
  return server.ctx.store.db
    .selectFrom("refund_claims")
    .select(["status", "address"])
    .where("refund_id", "=", requestId)
    .executeTakeFirstOrThrow();
}

describe("refund claim links", () => {
  it("debits at once, shows the page, refuses an invalid address, claims once and pays out there", async () => {
    const { m, invoiceId } = await paidInvoice();
    const before = Number((await balances(server, m.id)).USDT);
    const { requestId, path, answer } = await claimRefund(m, invoiceId, "30");
    expect(answer.body.request).toMatchObject({ amount: "30", to_address: null, status: "processing" });
    const expiresIn = Date.parse(answer.body.claimExpiresAt) - Date.now();
    expect(expiresIn).toBeGreaterThan(29.9 * 86_400_000);
    expect(expiresIn).toBeLessThanOrEqual(30 * 86_400_000);
    expect(before - Number((await balances(server, m.id)).USDT)).toBe(30);
    const payout = () =>
      server.ctx.store.db.selectFrom("payouts").selectAll().where("request_id", "=", requestId).executeTakeFirst();
    expect(await payout()).toBeUndefined();
    expect(await invoiceStatus(server, m, invoiceId)).toBe("completed");
    await expectHealthyLedger(server);

    const page = await call(server.baseUrl, "GET", `${path}?lang=en`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
    // The payer bears the 1 USDT network fee: 29 arrive.
    expect(page.text).toContain("29 USDT");
    expect(page.text).toContain('name="address"');
    const french = await call(server.baseUrl, "GET", `${path}?lang=fr`);
    expect(french.text).toContain("Réclamer le remboursement");

    const invalid = await call(server.baseUrl, "POST", path, { body: { address: "0xnot-an-address" } });
    expectProblem(invalid, 400, "invalid_address");
    expect(await claimState(requestId)).toEqual({ status: "open", address: null });
    expect(await payout()).toBeUndefined();

    const claimed = await call(server.baseUrl, "POST", path, { body: { address: PAYER } });
    expect(claimed.status).toBe(200);
    expect(claimed.body.request).toMatchObject({ id: requestId, to_address: PAYER_CHECKSUMMED, status: "processing" });
    expect(await payout()).toMatchObject({ state: "queued", amount: "29000000", destination: PAYER_CHECKSUMMED });
    expect(await eventTypes(m)).toContain("refund.claimed");

    const again = await call(server.baseUrl, "POST", path, { body: { address: PAYER } });
    expectProblem(again, 409, "refund_claim_closed");
    expect((await payoutOutcome(server, m, requestId, { status: "completed" })).status).toBe(200);
    const done = await call(server.baseUrl, "GET", path);
    expect(done.text).toContain(`was sent to ${PAYER_CHECKSUMMED}`);
    expect(Number((await balances(server, m.id)).USDT)).toBe(before - 30);
    await expectHealthyLedger(server);
  });

  it("claims through the page's form: an invalid address shows the page again, a valid one lands on it", async () => {
    const { m, invoiceId } = await paidInvoice();
    const { path, requestId } = await claimRefund(m, invoiceId, "5");
    const form = (address: string) =>
      fetch(`${server.baseUrl}${path}?lang=en`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ address }).toString(),
        redirect: "manual",
      });
    const bad = await form("nope");
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain("This is not a valid address");
    const good = await form(PAYER);
    expect(good.status).toBe(303);
    expect(good.headers.get("location")).toBe(`${path}?lang=en`);
    expect(await claimState(requestId)).toEqual({ status: "claimed", address: PAYER_CHECKSUMMED });
    await expectHealthyLedger(server);
  });

  it("returns an unclaimed refund to the merchant once its 30 days passed, with refund.expired", async () => {
    const { m, invoiceId } = await paidInvoice();
    const before = Number((await balances(server, m.id)).USDT);
    const { requestId, path } = await claimRefund(m, invoiceId, "100");
    expect(await invoiceStatus(server, m, invoiceId)).toBe("refund_processing");
    // Not due yet: the worker leaves it.
    expect(await server.workers.loops.refundClaims?.runOnce()).toBe(0);
    await server.ctx.store.transaction((tx) =>
      tx.db
        .updateTable("refund_claims")
        .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
        .where("refund_id", "=", requestId)
        .execute(),
    );
    const page = await call(server.baseUrl, "GET", path);
    expect(page.status).toBe(410);
    expect(page.text).toContain("expired");
    expectProblem(await call(server.baseUrl, "POST", path, { body: { address: PAYER } }), 410, "refund_claim_expired");

    expect(await server.workers.loops.refundClaims?.runOnce()).toBe(1);
    expect(await claimState(requestId)).toEqual({ status: "expired", address: null });
    expect(Number((await balances(server, m.id)).USDT)).toBe(before);
    expect(await invoiceStatus(server, m, invoiceId)).toBe("completed");
    const refund = await merchant(server, m.apiKey, "GET", `/public/v1/refunds/${requestId}`);
    expect(refund.body.request.status).toBe("failed");
    expect(await eventTypes(m)).toContain("refund.expired");
    expect(await server.workers.loops.refundClaims?.runOnce()).toBe(0);
    await expectHealthyLedger(server);
  });

  it("refuses the zero address, a token's contract and the service's recorded addresses with 400 invalid_address", async () => {
    const { m, invoiceId } = await paidInvoice();
    const { path, requestId } = await claimRefund(m, invoiceId, "5");
    const usdt = await server.ctx.store.db
      .selectFrom("currencies")
      .select(["network", "contract_address"])
      .where("ticker", "=", "USDT")
      .executeTakeFirstOrThrow();
    // Earlier hot wallets and their factories, as the service records them: on the network, and with a deployment.
    const earlierHot = `0x${"e1".repeat(20)}`;
    const earlierFactory = `0x${"fa".repeat(20)}`;
    const deployer = `0x${"d2".repeat(20)}`;
    const deployed = `0x${"fd".repeat(20)}`;
    await server.ctx.store.transaction(async (tx) => {
      const network = { chainId: 1, rpcUrl: "http://127.0.0.1:9" };
      expect((await putNetwork(tx, server.ctx.box, usdt.network, network, nowIso())).ok).toBe(true);
      await takeHotNonce(tx, usdt.network, earlierHot, 0);
      await recordFactoryDeployed(tx, usdt.network, earlierFactory, nowIso());
      const deployment = {
        purpose: "deployment" as const,
        purposeId: deployed,
        network: usdt.network,
        chainId: 1,
        fromAddress: deployer,
        nonce: 0,
        hash: "0x1",
        raw: "0x2",
        call: { to: deployed as `0x${string}`, value: 0n },
        tokenContract: null,
        tokenAmount: 0n,
        gasLimit: 1n,
        fees: { maxFeePerGas: 1n, maxPriorityFeePerGas: 1n },
        replacesId: null,
      };
      await insertHotTransaction(tx, deployment, nowIso());
    });
    const refused = {
      zero: `0x${"0".repeat(40)}`,
      tokenContract: usdt.contract_address ?? "",
      tokenContractLowercase: (usdt.contract_address ?? "").toLowerCase(),
      earlierHotWallet: earlierHot,
      earlierFactory: earlierFactory.toUpperCase().replace("0X", "0x"),
      deployingHotWallet: deployer,
      deployedFactory: deployed,
    };
    for (const [kind, address] of Object.entries(refused)) {
      const answer = await call(server.baseUrl, "POST", path, { body: { address } });
      expect(answer.status, `${kind}: ${answer.text}`).toBe(400);
      expectProblem(answer, 400, "invalid_address");
    }
    // The page says why, beside the field, and asks for an address the payer controls on the network.
    const form = await fetch(`${server.baseUrl}${path}?lang=en`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ address: refused.zero }).toString(),
    });
    expect(form.status).toBe(400);
    const html = await form.text();
    expect(html).toContain('aria-invalid="true"');
    expect(html).toContain("zero address");
    expect(html).toContain(`Give an address you control on the ${usdt.network} network`);
    expect(await claimState(requestId)).toEqual({ status: "open", address: null });
    expect((await call(server.baseUrl, "POST", path, { body: { address: PAYER } })).status).toBe(200);
  });

  it("answers a browser with a page and the reason, in the payer's page's design, never with JSON", async () => {
    const { m, invoiceId } = await paidInvoice();
    await server.ctx.store.transaction((tx) =>
      tx.db.updateTable("merchants").set({ merchant_name: "Northwind <Coffee>" }).where("id", "=", m.id).execute(),
    );
    const { path } = await claimRefund(m, invoiceId, "5");
    const asBrowser = { accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8" };
    const form = (body: string, lang = "en") =>
      fetch(`${server.baseUrl}${path}?lang=${lang}`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", ...asBrowser },
        body,
        redirect: "manual",
      });
    const open = await call(server.baseUrl, "GET", `${path}?lang=de`);
    expect(open.text).toContain('<span class="name">Northwind &lt;Coffee&gt;</span>');
    for (const lang of ["en", "fr", "es", "de"]) expect(open.text).toContain(`href="${path}?lang=${lang}"`);
    expect(open.text).toContain('<label for="address">');
    const empty = await form("address=");
    expect([empty.status, empty.headers.get("content-type")]).toEqual([400, "text/html; charset=utf-8"]);
    expect(await empty.text()).toContain("Enter your address.");
    expect((await form(new URLSearchParams({ address: PAYER }).toString())).status).toBe(303);
    const again = await form(new URLSearchParams({ address: PAYER }).toString(), "fr");
    expect([again.status, again.headers.get("content-type")]).toEqual([409, "text/html; charset=utf-8"]);
    expect(await again.text()).toContain("Ce remboursement a été réclamé");
    // A browser posting JSON, or asking for an over-long token, still gets a page.
    const json = await fetch(`${server.baseUrl}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", ...asBrowser },
      body: JSON.stringify({ address: PAYER }),
    });
    expect([json.status, json.headers.get("content-type")]).toEqual([409, "text/html; charset=utf-8"]);
    const long = await fetch(`${server.baseUrl}/refund/${"x".repeat(101)}`, { headers: asBrowser });
    expect([long.status, long.headers.get("content-type")]).toEqual([404, "text/html; charset=utf-8"]);
    // An API client still gets the problem.
    expectProblem(await call(server.baseUrl, "POST", path, { body: { address: PAYER } }), 409, "refund_claim_closed");
  });

  it("answers 404 for an unknown token", async () => {
    expect((await call(server.baseUrl, "GET", "/refund/unknown-token")).status).toBe(404);
    expectProblem(
      await call(server.baseUrl, "POST", "/refund/unknown-token", { body: { address: PAYER } }),
      404,
      "refund_claim_not_found",
    );
  });
});
