// Agents paying over HTTP 402 (product §28, issue 46) on anvil: a resource server written with the official @x402/express middleware and this service as its facilitator, paid by an @x402/fetch client with an EIP-3009 token; replays and tampering refused, twenty parallel settles one transaction.
import type { AddressInfo } from "node:net";
import { x402Client } from "@x402/core/client";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader, HTTPFacilitatorClient } from "@x402/core/http";
import type { PaymentPayload } from "@x402/core/types";
import { ExactEvmScheme as ExactEvmClientScheme } from "@x402/evm/exact/client";
import { ExactEvmScheme as ExactEvmServerScheme } from "@x402/evm/exact/server";
import { paymentMiddleware, x402ResourceServer } from "@x402/express";
import { wrapFetchWithPayment } from "@x402/fetch";
import express from "express";
import { encodeFunctionData, type Hex, parseEther, parseSignature } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { settleX402Payment } from "../../src/app/settleX402Payment.ts";
import { eip3009Abi } from "../../src/domain/walletAuthorizationAbi.ts";
import { checkOnChainOf } from "../../src/http/walletChecks.ts";
import type { AuthorizationToken } from "../support/chain.ts";
import {
  auditAndExpect,
  CONFIRMATIONS,
  liveMerchant,
  outboxOf,
  payer,
  usdtEntry,
  useLiveFixture,
} from "../support/live.ts";
import { admin, call } from "../support/server.ts";
import { payerAccount, sendAs } from "../support/walletPayments.ts";

const live = useLiveFixture();
let usdc: AuthorizationToken;
let merchantKey: { id: string; apiKey: string };
let network: `eip155:${number}`;
let resource: { url: string; close: () => Promise<void> };
let client: x402Client;

/** 2.5 USDC, in the token's units: the price of the resource. */
const PRICE = "2500000";

/** A resource server written as the x402 docs write one: @x402/express, this service as its facilitator. */
async function startResourceServer(hot: Hex, apiKey: string) {
  const facilitator = new HTTPFacilitatorClient({
    url: `${live.server.baseUrl}/x402/v1`,
    createAuthHeaders: async () => {
      const headers = { "x-api-key": apiKey };
      return { verify: headers, settle: headers, supported: headers };
    },
  });
  const server = new x402ResourceServer(facilitator).register(network, new ExactEvmServerScheme());
  const app = express();
  const price = { amount: PRICE, asset: usdc.address, extra: { ...usdc.eip712 } };
  const routes = {
    "GET /report": {
      accepts: { scheme: "exact", network, payTo: hot, price, maxTimeoutSeconds: 600 },
      description: "Today's weather report",
    },
  };
  app.use(paymentMiddleware(routes, server));
  app.get("/report", (_request, response) => {
    response.json({ report: "sunny" });
  });
  const listening = app.listen(0, "127.0.0.1");
  await new Promise<void>((resolve) => listening.once("listening", () => resolve()));
  const { port } = listening.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/report`,
    close: () => new Promise<void>((resolve) => listening.close(() => resolve())),
  };
}

beforeAll(async () => {
  const { chain, server } = live;
  usdc = await chain.deployAuthorizationToken();
  network = `eip155:${chain.chainId}`;
  const usdcEntry = usdtEntry(usdc, {
    fullName: "USD Coin",
    internalTicker: "USDC_ERC20",
    authorization: { kind: "eip3009", ...usdc.eip712 },
  });
  expect((await admin(server, "PUT", "/currencies/USDC", usdcEntry)).status).toBe(200);
  await usdc.mint(payer(chain, 1), 1_000_000_000n);
  const hot = server.ctx.wallet?.hotAddress as Hex;
  await chain.waitForReceipt(await chain.sendEth(payer(chain, 3), hot, parseEther("1")));
  merchantKey = await liveMerchant(server);
  resource = await startResourceServer(hot, merchantKey.apiKey);
  // A client's spend controls allow only well-known assets by default: the test token is listed.
  client = x402Client.fromConfig({
    schemes: [{ network, client: new ExactEvmClientScheme(payerAccount(chain, 1)) }],
    spendControls: { allowedAssets: [{ network, asset: usdc.address }] },
  });
}, 60_000);

afterAll(async () => {
  await resource?.close();
});

/** Passes of the hot wallet's worker while `work` is pending (the settle waits for its transaction to be mined). */
async function driving<T>(work: Promise<T>): Promise<T> {
  let done = false;
  const watched = work.finally(() => {
    done = true;
  });
  const loop = live.server.workers.loops.chainPayouts;
  if (!loop) throw new Error("no chain payout loop");
  for (let i = 0; i < 5_000 && !done; i++) await loop.runOnce();
  return watched;
}

/** The submission deep: confirmations mined, the worker's passes, the payer screened (bounded). */
async function confirm() {
  const loop = live.server.workers.loops.chainPayouts;
  for (let i = 0; i < 4; i++) {
    await live.chain.mine(CONFIRMATIONS);
    await loop?.runOnce();
  }
  await live.server.workers.loops.screening?.runOnce();
}

async function usdcAvailable(): Promise<string> {
  const balances = await admin(live.server, "GET", `/merchants/${merchantKey.id}/balances`);
  const found = (balances.body as { currency: string; available: string }[]).find((b) => b.currency === "USDC");
  return found?.available ?? "0";
}

async function x402Invoices() {
  return live.server.ctx.store.db
    .selectFrom("invoices")
    .selectAll()
    .where("merchant_id", "=", merchantKey.id)
    .where("idempotency_key", "like", "x402:%")
    .execute();
}

/** A fresh payment payload for the resource, made by the client from the resource server's 402. */
async function signedPayload(): Promise<PaymentPayload> {
  const first = await fetch(resource.url);
  expect(first.status).toBe(402);
  const required = decodePaymentRequiredHeader(first.headers.get("PAYMENT-REQUIRED") ?? "");
  return client.createPaymentPayload(required);
}

function facilitator(
  path: "verify" | "settle",
  paymentPayload: PaymentPayload,
  requirements = paymentPayload.accepted,
) {
  return call(live.server.baseUrl, "POST", `/x402/v1/${path}`, {
    headers: { "x-api-key": merchantKey.apiKey },
    body: { x402Version: 2, paymentPayload, paymentRequirements: requirements },
  });
}

describe("x402 facilitator", () => {
  it("answers /supported with the EIP-3009 networks, only to a merchant's key", async () => {
    const supported = await call(live.server.baseUrl, "GET", "/x402/v1/supported", {
      headers: { "x-api-key": merchantKey.apiKey },
    });
    expect(supported.status).toBe(200);
    expect(supported.body.kinds).toEqual([{ x402Version: 2, scheme: "exact", network }]);
    expect(supported.body.signers["eip155:*"]).toEqual([live.server.ctx.wallet?.hotAddress]);
    expect((await call(live.server.baseUrl, "GET", "/x402/v1/supported")).status).toBe(401);
  });

  it("@x402/express + @x402/fetch: 402, the client pays, 200 with the payment response; the merchant is credited once", async () => {
    const first = await fetch(resource.url);
    expect(first.status).toBe(402);
    const before = await usdcAvailable();
    const submissionsBefore = (await outboxOf(live.server, "submission")).length;
    const paidFetch = wrapFetchWithPayment(fetch, client);
    const paid = await driving(paidFetch(resource.url));
    expect(paid.status).toBe(200);
    expect(await paid.json()).toEqual({ report: "sunny" });
    const settled = decodePaymentResponseHeader(paid.headers.get("PAYMENT-RESPONSE") ?? "");
    expect(settled).toMatchObject({ success: true, network, payer: payerAccount(live.chain, 1).address.toLowerCase() });
    const submissions = await outboxOf(live.server, "submission");
    expect(submissions).toHaveLength(submissionsBefore + 1);
    expect(submissions.at(-1)?.hash).toBe(settled.transaction);
    await confirm();
    const invoices = await x402Invoices();
    expect(invoices).toHaveLength(1);
    expect(invoices[0]?.status).toBe("completed");
    expect(invoices[0]?.order_no).toBe(resource.url);
    expect(invoices[0]?.description).toContain("Today's weather report");
    // The merchant's balance rises once: the amount less the entry's network fee (1 USDC).
    expect(Number(await usdcAvailable()) - Number(before)).toBe(1.5);
    await confirm();
    expect(Number(await usdcAvailable()) - Number(before)).toBe(1.5);
    await auditAndExpect(live.server);
  });

  it("refuses a tampered or replayed payload at /verify and /settle, and sends nothing for them", async () => {
    const payload = await signedPayload();
    expect((await facilitator("verify", payload)).body).toMatchObject({ isValid: true });
    const submissionsBefore = (await outboxOf(live.server, "submission")).length;
    const authorization = (payload.payload as { authorization: Record<string, string> }).authorization;
    // Tampered: more than was signed (and the requirements asking it), or another recipient.
    const more = { ...payload.accepted, amount: "9999999" };
    const tampered = {
      ...payload,
      accepted: more,
      payload: { ...payload.payload, authorization: { ...authorization, value: more.amount } },
    };
    for (const path of ["verify", "settle"] as const) {
      const answer = await facilitator(path, tampered, more);
      expect(answer.body.invalidReason ?? answer.body.errorReason).toBe("invalid_exact_evm_signature");
    }
    const elsewhere = { ...payload.accepted, payTo: payer(live.chain, 4) };
    expect((await facilitator("verify", payload, elsewhere)).body.invalidReason).toBe(
      "invalid_exact_evm_recipient_mismatch",
    );
    expect((await outboxOf(live.server, "submission")).length).toBe(submissionsBefore);
    // Settled once; the same payload settled again answers the same transaction.
    const settled = await driving(facilitator("settle", payload));
    expect(settled.body).toMatchObject({ success: true, network });
    expect((await facilitator("settle", payload)).body).toEqual(settled.body);
    // Replayed: its nonce is used, for /verify, and for /settle with another resource or terms.
    const replayed = await facilitator("verify", payload);
    expect(replayed.body).toMatchObject({ isValid: false, invalidReason: "invalid_exact_evm_nonce_already_used" });
    const otherResource = { ...payload, resource: { url: "http://127.0.0.1/other", description: "another" } };
    const replayedSettle = await facilitator("settle", otherResource);
    expect(replayedSettle.body).toMatchObject({ success: false, errorReason: "invalid_exact_evm_nonce_already_used" });
    expect((await outboxOf(live.server, "submission")).length).toBe(submissionsBefore + 1);
    await confirm();
  });

  it("sends one transaction for twenty parallel settles of one payload, and answers each the same", async () => {
    const payload = await signedPayload();
    const submissionsBefore = (await outboxOf(live.server, "submission")).length;
    const invoicesBefore = (await x402Invoices()).length;
    const answers = await driving(Promise.all(Array.from({ length: 20 }, () => facilitator("settle", payload))));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect(answers[0]?.body).toMatchObject({ success: true, network });
    for (const a of answers) expect(a.body).toEqual(answers[0]?.body);
    expect((await outboxOf(live.server, "submission")).length).toBe(submissionsBefore + 1);
    expect((await x402Invoices()).length).toBe(invoicesBefore + 1);
    await confirm();
    await auditAndExpect(live.server);
  });

  it("answers settlement_pending when not mined in time; the outbox finishes it and a later settle answers it: paid once", async () => {
    const payload = await signedPayload();
    const before = await usdcAvailable();
    const submissionsBefore = (await outboxOf(live.server, "submission")).length;
    const body = { x402Version: 2, paymentPayload: payload, paymentRequirements: payload.accepted };
    // No wait at all and no worker pass: the settle cannot see it mined.
    const ports = { checkOnChain: checkOnChainOf(live.server.ctx), now: () => new Date(), waitMs: 0, pollMs: 10 };
    const pending = await settleX402Payment(live.server.ctx, { merchantId: merchantKey.id, body, ports });
    expect(pending).toMatchObject({ ok: true, value: { success: false, errorReason: "settlement_pending", network } });
    expect((await outboxOf(live.server, "submission")).length).toBe(submissionsBefore);
    // The chain payout worker submits it; a settle of the same payload then answers its transaction.
    await live.server.workers.loops.chainPayouts?.runOnce();
    const sent = await outboxOf(live.server, "submission");
    expect(sent).toHaveLength(submissionsBefore + 1);
    const settled = await facilitator("settle", payload);
    expect(settled.body).toMatchObject({ success: true, transaction: sent.at(-1)?.hash });
    await confirm();
    expect(Number(await usdcAvailable()) - Number(before)).toBe(1.5);
    expect((await outboxOf(live.server, "submission")).length).toBe(submissionsBefore + 1);
    await auditAndExpect(live.server);
  });

  it("credits a payment another submitted first with the payer's signature (a front-run): the tokens never go uncredited", async () => {
    const payload = await signedPayload();
    const before = await usdcAvailable();
    const body = { x402Version: 2, paymentPayload: payload, paymentRequirements: payload.accepted };
    const ports = { checkOnChain: checkOnChainOf(live.server.ctx), now: () => new Date(), waitMs: 0, pollMs: 10 };
    const pending = await settleX402Payment(live.server.ctx, { merchantId: merchantKey.id, body, ports });
    expect(pending).toMatchObject({ ok: true, value: { errorReason: "settlement_pending" } });
    // Someone watching submits the payer's signature before the hot wallet does.
    const { authorization, signature } = payload.payload as {
      authorization: { from: Hex; to: Hex; value: string; validAfter: string; validBefore: string; nonce: Hex };
      signature: Hex;
    };
    const { r, s, v, yParity } = parseSignature(signature);
    const data = encodeFunctionData({
      abi: eip3009Abi,
      functionName: "transferWithAuthorization",
      args: [
        authorization.from,
        authorization.to,
        BigInt(authorization.value),
        BigInt(authorization.validAfter),
        BigInt(authorization.validBefore),
        authorization.nonce,
        Number(v ?? BigInt(yParity + 27)),
        r,
        s,
      ],
    });
    const frontRun = await sendAs(live.chain, payer(live.chain, 3), { to: usdc.address, data });
    expect(frontRun.status).toBe("success");
    await confirm();
    await confirm();
    const settled = await facilitator("settle", payload);
    expect(settled.body).toMatchObject({ success: true, transaction: frontRun.hash });
    expect(Number(await usdcAvailable()) - Number(before)).toBe(1.5);
    await auditAndExpect(live.server);
  });
});
