// Paying with a wallet (product §28, issue 45) on anvil: the payer signs what GET /pay/{id}/status offers, POST /pay/{id}/authorization is checked before anything is sent, and the hot wallet submits it once through the outbox.
import { type Hex, parseEther } from "viem";
import { beforeAll, describe, expect, it } from "vitest";
import { submitWalletAuthorizations } from "../../src/chain/walletSubmissions.ts";
import { CHAIN_PAYOUT_DEFAULTS, type PayoutChain, payoutChainsOf } from "../../src/workers/chainPayouts.ts";
import type { TestToken } from "../support/chain.ts";
import {
  auditAndExpect,
  CONFIRMATIONS,
  depositOf,
  getInvoice,
  liveInvoice,
  liveMerchant,
  outboxOf,
  payer,
  paymentRows,
  scan,
  usdtEntry,
  useLiveFixture,
} from "../support/live.ts";
import { admin, call } from "../support/server.ts";
import {
  approvePermit2,
  payerAccount,
  randomAuthorizationNonce,
  randomPermit2Nonce,
} from "../support/walletPayments.ts";

const live = useLiveFixture();
let usdc: TestToken & { eip712: { name: string; version: string } };

beforeAll(async () => {
  const { chain, server, token } = live;
  usdc = await chain.deployAuthorizationToken();
  await chain.installPermit2();
  const usdcEntry = usdtEntry(usdc, {
    fullName: "USD Coin",
    icon: "/icons/usdc.svg",
    iconDark: "/icons/usdc-dark.svg",
    internalTicker: "USDC_ERC20",
    authorization: { kind: "eip3009", ...usdc.eip712 },
  });
  expect((await admin(server, "PUT", "/currencies/USDC", usdcEntry)).status).toBe(200);
  const usdt = await admin(server, "PUT", "/currencies/USDT", usdtEntry(token, { authorization: { kind: "permit2" } }));
  expect(usdt.status).toBe(200);
  await usdc.mint(payer(chain, 1), 1_000_000_000n);
  const hot = server.ctx.wallet?.hotAddress as Hex;
  await chain.waitForReceipt(await chain.sendEth(payer(chain, 3), hot, parseEther("1")));
}, 60_000);

/** The status's signing terms on ethereum. */
async function termsOf(invoiceId: string) {
  const status = await call(live.server.baseUrl, "GET", `/pay/${invoiceId}/status`);
  expect(status.status).toBe(200);
  const network = status.body.networks.find((n: { name: string }) => n.name === "ethereum");
  return network.authorization;
}

/** The payer signs the status's typed data exactly as a wallet's eth_signTypedData_v4 would, adding its address and a nonce. */
async function signAsWallet(
  invoiceId: string,
  payerIndex: number,
  change: (message: Record<string, any>) => void = () => {},
) {
  const terms = await termsOf(invoiceId);
  const account = payerAccount(live.chain, payerIndex);
  const nonce = terms.kind === "eip3009" ? randomAuthorizationNonce() : randomPermit2Nonce().toString();
  const message = { ...terms.typedData.message, from: account.address, nonce };
  change(message);
  const { EIP712Domain: _domain, ...types } = terms.typedData.types;
  const signature = await account.signTypedData({ ...terms.typedData, types, message });
  const window =
    terms.kind === "eip3009"
      ? { validAfter: message.validAfter, validBefore: message.validBefore }
      : { deadline: message.deadline };
  return { network: "ethereum", from: account.address, signature, nonce: message.nonce, ...window };
}

function post(invoiceId: string, body: unknown) {
  return call(live.server.baseUrl, "POST", `/pay/${invoiceId}/authorization`, { body });
}

/** Passes of the hot wallet's worker and blocks until the submission is deep and settled (bounded). */
async function submitAndSettle() {
  const loop = live.server.workers.loops.chainPayouts;
  if (!loop) throw new Error("no chain payout loop");
  await loop.runOnce();
  for (let i = 0; i < 4; i++) {
    await live.chain.mine(CONFIRMATIONS);
    await loop.runOnce();
  }
  // The payer is screened like any sender before the payment counts (product §21).
  await live.server.workers.loops.screening?.runOnce();
}

async function submissions() {
  return outboxOf(live.server, "submission");
}

describe("paying with a wallet", () => {
  it("EIP-3009: the signature completes the invoice, the tokens reach the hot wallet in one transaction, no flush", async () => {
    const m = await liveMerchant(live.server);
    const invoice = await liveInvoice(live.server, m.apiKey, { currency: "USDC", amount: "10" });
    const terms = await termsOf(invoice.id);
    expect(terms.kind).toBe("eip3009");
    expect(terms.typedData.message.to).toBe(live.server.ctx.wallet?.hotAddress);
    const hotBefore = await usdc.balanceOf(live.server.ctx.wallet?.hotAddress as Hex);
    const before = (await submissions()).length;
    const answer = await post(invoice.id, await signAsWallet(invoice.id, 1));
    expect(answer.status).toBe(202);
    expect(answer.body.state).toBe("accepted");
    await submitAndSettle();
    expect((await getInvoice(live.server, m.apiKey, invoice.id)).status).toBe("completed");
    const hotAfter = await usdc.balanceOf(live.server.ctx.wallet?.hotAddress as Hex);
    expect(hotAfter - hotBefore).toBe(BigInt(terms.typedData.message.value));
    expect((await submissions()).length).toBe(before + 1);
    expect(await outboxOf(live.server, "flush")).toHaveLength(0);
    const rows = await paymentRows(live.server, invoice.id);
    expect(rows).toHaveLength(1);
    await auditAndExpect(live.server);
  });

  it("refuses a forged, wrong-amount, expired or replayed authorization with its code, and sends nothing", async () => {
    const m = await liveMerchant(live.server);
    const invoice = await liveInvoice(live.server, m.apiKey, { currency: "USDC", amount: "7" });
    const before = (await submissions()).length;
    const forged = { ...(await signAsWallet(invoice.id, 2)), from: payer(live.chain, 1) };
    expect((await post(invoice.id, forged)).body.code).toBe("authorization_signature");
    const less = await signAsWallet(invoice.id, 1, (message) => {
      message.value = "1000000";
    });
    expect((await post(invoice.id, less)).body.code).toBe("authorization_signature");
    expect((await post(invoice.id, { ...less, value: "1000000" })).body.code).toBe("authorization_value");
    const late = await signAsWallet(invoice.id, 1, (message) => {
      message.validBefore = String(BigInt(message.validBefore) + 86_400n);
    });
    const refusedLate = await post(invoice.id, late);
    expect([refusedLate.status, refusedLate.body.code]).toEqual([400, "authorization_window"]);
    const closed = await signAsWallet(invoice.id, 1, (message) => {
      message.validBefore = String(Math.floor(Date.now() / 1000) - 60);
    });
    expect((await post(invoice.id, closed)).body.code).toBe("authorization_window");
    // Replayed: a nonce the payer already used on chain (another invoice's settled payment).
    const paid = await liveInvoice(live.server, m.apiKey, { currency: "USDC", amount: "2" });
    const used = await signAsWallet(paid.id, 1);
    expect((await post(paid.id, used)).status).toBe(202);
    await submitAndSettle();
    const replay = await signAsWallet(invoice.id, 1, (message) => {
      message.nonce = used.nonce;
    });
    const refusedReplay = await post(invoice.id, replay);
    expect([refusedReplay.status, refusedReplay.body.code]).toEqual([400, "authorization_nonce_used"]);
    expect((await submissions()).length).toBe(before + 1);
    expect((await getInvoice(live.server, m.apiKey, invoice.id)).status).toBe("pending");
  });

  it("sends one transaction for twenty parallel posts of one authorization", async () => {
    const m = await liveMerchant(live.server);
    const invoice = await liveInvoice(live.server, m.apiKey, { currency: "USDC", amount: "3" });
    const before = (await submissions()).length;
    const signed = await signAsWallet(invoice.id, 1);
    const answers = await Promise.all(Array.from({ length: 20 }, () => post(invoice.id, signed)));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(202));
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(1);
    await submitAndSettle();
    expect((await post(invoice.id, signed)).body.state).toBe("settled");
    expect((await submissions()).length).toBe(before + 1);
    expect((await getInvoice(live.server, m.apiKey, invoice.id)).status).toBe("completed");
    await auditAndExpect(live.server);
  });

  it("Permit2: after the one-time approval, the witness signature completes a USDT invoice", async () => {
    const m = await liveMerchant(live.server);
    const invoice = await liveInvoice(live.server, m.apiKey, { currency: "USDT", amount: "5" });
    const terms = await termsOf(invoice.id);
    expect(terms.kind).toBe("permit2");
    expect(terms.typedData.message.witness).toEqual({ id: invoice.id });
    const unapproved = await post(invoice.id, await signAsWallet(invoice.id, 1));
    expect(unapproved.body.code).toBe("authorization_allowance");
    await approvePermit2(live.chain, 1, live.token.address);
    const answer = await post(invoice.id, await signAsWallet(invoice.id, 1));
    expect(answer.status).toBe(202);
    await submitAndSettle();
    expect((await getInvoice(live.server, m.apiKey, invoice.id)).status).toBe("completed");
    await auditAndExpect(live.server);
  });

  it("credits a payer who both signs and transfers for both: an overpayment", async () => {
    const m = await liveMerchant(live.server);
    const invoice = await liveInvoice(live.server, m.apiKey, { currency: "USDC", amount: "4" });
    expect((await post(invoice.id, await signAsWallet(invoice.id, 1))).status).toBe(202);
    const deposit = await depositOf(live.server, invoice.id);
    await live.chain.waitForReceipt(await usdc.transfer(payer(live.chain, 1), deposit, 4_000_000n));
    await submitAndSettle();
    for (let i = 0; i < 3; i++) await live.server.workers.loops.scanner?.runOnce();
    const rows = await paymentRows(live.server, invoice.id);
    expect(rows).toHaveLength(2);
    const paid = await getInvoice(live.server, m.apiKey, invoice.id);
    expect(paid.status).toBe("completed");
    await auditAndExpect(live.server);
  });

  it("expires an authorization whose window closes unsubmitted: the invoice stays payable by transfer", async () => {
    const m = await liveMerchant(live.server);
    const invoice = await liveInvoice(live.server, m.apiKey, { currency: "USDC", amount: "6" });
    const soon = String(Math.floor(Date.now() / 1000) + 300);
    const signed = await signAsWallet(invoice.id, 1, (message) => {
      message.validBefore = soon;
    });
    const accepted = await post(invoice.id, signed);
    expect(accepted.status).toBe(202);
    const before = (await submissions()).length;
    // The hot wallet's worker comes by only once the window is closing (a node down meanwhile, say).
    const [chain] = await payoutChainsOf(live.server.ctx);
    const later = () => new Date((Number(soon) - 10) * 1000);
    const options = { ...CHAIN_PAYOUT_DEFAULTS, now: later, log: live.server.app.log };
    expect(await submitWalletAuthorizations(live.server.ctx.store, chain as PayoutChain, options)).toBe(1);
    expect((await post(invoice.id, signed)).body.state).toBe("expired");
    expect((await submissions()).length).toBe(before);
    await live.chain.waitForReceipt(
      await usdc.transfer(payer(live.chain, 1), await depositOf(live.server, invoice.id), 6_000_000n),
    );
    await live.chain.mine(CONFIRMATIONS);
    for (let i = 0; i < 3; i++) await scan(live.server);
    expect((await getInvoice(live.server, m.apiKey, invoice.id)).status).toBe("completed");
  });

  it("fails an authorization whose payer moved the tokens before it was submitted, and sends nothing", async () => {
    const m = await liveMerchant(live.server);
    const invoice = await liveInvoice(live.server, m.apiKey, { currency: "USDC", amount: "2" });
    await live.chain.waitForReceipt(await usdc.mint(payer(live.chain, 2), 2_000_000n));
    const signed = await signAsWallet(invoice.id, 2);
    expect((await post(invoice.id, signed)).status).toBe(202);
    await live.chain.waitForReceipt(await usdc.transfer(payer(live.chain, 2), payer(live.chain, 3), 2_000_000n));
    const before = (await submissions()).length;
    await live.server.workers.loops.chainPayouts?.runOnce();
    expect((await post(invoice.id, signed)).body.state).toBe("failed");
    expect((await submissions()).length).toBe(before);
    expect((await getInvoice(live.server, m.apiKey, invoice.id)).status).toBe("pending");
  });

  it("shows each entry's authorization in GET /public/v1/currencies", async () => {
    const answer = await call(live.server.baseUrl, "GET", "/public/v1/currencies");
    const usdcInfo = answer.body.find((c: { ticker: string }) => c.ticker === "USDC");
    expect(usdcInfo.authorization).toEqual({ kind: "eip3009", ...usdc.eip712 });
    const eth = answer.body.find((c: { ticker: string }) => c.ticker === "ETH");
    expect(eth.authorization).toBeNull();
  });

  it("refuses an EIP-3009 domain the contract does not state", async () => {
    const wrong = usdtEntry(usdc, {
      fullName: "USD Coin",
      internalTicker: "USDC_ERC20",
      authorization: { kind: "eip3009", name: "USD Coin", version: "1" },
    });
    const answer = await admin(live.server, "PUT", "/currencies/USDC", wrong);
    expect([answer.status, answer.body.code]).toEqual([400, "authorization_domain_mismatch"]);
    expect(answer.body.detail).toContain(`version "${usdc.eip712.version}"`);
  });
});
