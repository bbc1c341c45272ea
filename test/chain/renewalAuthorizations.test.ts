// Pre-authorized renewals (product §29) on anvil: a payer signs the next periods on the subscription's page, each is submitted with its period's invoice and renews the subscription by itself; a cancelled authorization stops its period; bad posts are refused by code and store nothing; the merchant's cancel revokes.
import { encodeFunctionData, type Hex, parseEther } from "viem";
import { beforeAll, describe, expect, it } from "vitest";
import { advanceTestClock } from "../../src/app/subscriptions.ts";
import { RENEWAL_SLACK_MS, renewalNonce } from "../../src/domain/renewalAuthorizations.ts";
import type { AuthorizationToken } from "../support/chain.ts";
import {
  auditAndExpect,
  CONFIRMATIONS,
  getInvoice,
  liveMerchant,
  outboxOf,
  payer,
  usdtEntry,
  useLiveFixture,
} from "../support/live.ts";
import { admin, call, expectProblem, merchant } from "../support/server.ts";
import { signedCall } from "../support/signing.ts";
import { payerAccount, sendAs } from "../support/walletPayments.ts";

const live = useLiveFixture();
const PAYER = 1;
let usdc: AuthorizationToken;

beforeAll(async () => {
  const { chain, server } = live;
  usdc = await chain.deployAuthorizationToken();
  const entry = usdtEntry(usdc, {
    fullName: "USD Coin",
    icon: "/icons/usdc.svg",
    iconDark: "/icons/usdc-dark.svg",
    internalTicker: "USDC_ERC20",
    authorization: { kind: "eip3009", ...usdc.eip712 },
  });
  expect((await admin(server, "PUT", "/currencies/USDC", entry)).status).toBe(200);
  await usdc.mint(payer(chain, PAYER), 1_000_000_000n);
  const hot = server.ctx.wallet?.hotAddress as Hex;
  await chain.waitForReceipt(await chain.sendEth(payer(chain, 3), hot, parseEther("1")));
}, 60_000);

type Merchant = Awaited<ReturnType<typeof liveMerchant>>;

/** A daily USDC plan with a 4-day trial (so the first invoice comes a day after subscribing) and a customer on it. */
async function subscribe(m: Merchant, amount = "5") {
  const plan = await merchant(live.server, m.apiKey, "POST", "/public/v1/plans", {
    name: "Daily beans",
    currency: "USDC",
    amount,
    interval: "day",
    trialDays: 4,
  });
  expect(plan.status, plan.text).toBe(200);
  const { answer } = await signedCall(live.server.baseUrl, {
    apiKey: m.apiKey,
    secret: m.secretKey,
    path: "/public/v1/subscriptions",
    body: { planId: plan.body.id, customer: { reference: "cust" } },
  });
  expect(answer.status, answer.text).toBe(200);
  return answer.body as { id: string; status: string; openInvoice: null };
}

/** What the page gets to sign for the payer's next `periods` periods. */
async function offer(id: string, payerIndex: number, periods: number) {
  const from = payerAccount(live.chain, payerIndex).address;
  const answer = await call(live.server.baseUrl, "GET", `/s/${id}/authorizations?from=${from}&periods=${periods}`);
  expect(answer.status, answer.text).toBe(200);
  return answer.body as { network: string; authorizations: { period: number; typedData: any }[] };
}

/** Each period signed as a wallet's eth_signTypedData_v4 would (by `signer`, the payer unless told), `change` applied first. */
async function signed(
  o: Awaited<ReturnType<typeof offer>>,
  payerIndex: number,
  options: { signer?: number; change?: (message: Record<string, string>, period: number) => void } = {},
) {
  const account = payerAccount(live.chain, options.signer ?? payerIndex);
  const authorizations = [];
  for (const { period, typedData } of o.authorizations) {
    const message = { ...typedData.message };
    options.change?.(message, period);
    const { EIP712Domain: _domain, ...types } = typedData.types;
    const signature = await account.signTypedData({ ...typedData, types, message });
    const { nonce, value, validAfter, validBefore } = message;
    authorizations.push({ period, nonce, value, validAfter, validBefore, signature });
  }
  return { network: o.network, from: payerAccount(live.chain, payerIndex).address, authorizations };
}

function post(id: string, body: unknown) {
  return call(live.server.baseUrl, "POST", `/s/${id}/authorizations`, { body });
}

async function renewals(id: string) {
  return live.server.ctx.store.db
    .selectFrom("renewal_authorizations")
    .selectAll()
    .where("subscription_id", "=", id)
    .orderBy("period")
    .execute();
}

/** The chain's clock moved to `seconds` (never back), a block stamped then. */
async function chainTimeAtLeast(seconds: number): Promise<void> {
  const latest = await live.chain.client.getBlock({ blockTag: "latest" });
  const ahead = seconds - Number(latest.timestamp);
  if (ahead > 0) await live.chain.increaseTime(ahead);
  await live.chain.mine(1);
}

/** The subscription's schedule run up to `ms` on its test clock, the chain's clock there too. */
async function advance(m: Merchant, id: string, ms: number) {
  await chainTimeAtLeast(Math.ceil(ms / 1000));
  const answer = await advanceTestClock(live.server.ctx, m.id, { id, to: new Date(ms).toISOString() });
  if (!answer.ok) throw new Error(`advance: ${answer.refusal.code} ${answer.refusal.detail}`);
  return answer.value as Record<string, any>;
}

/** Passes of the hot wallet's worker and blocks until its submissions are deep and settled, then screening. */
async function submitAndSettle(): Promise<void> {
  const loop = live.server.workers.loops.chainPayouts;
  if (!loop) throw new Error("no chain payout loop");
  await loop.runOnce();
  for (let i = 0; i < 4; i++) {
    await live.chain.mine(CONFIRMATIONS);
    await loop.runOnce();
  }
  await live.server.workers.loops.screening?.runOnce();
}

/** When period k's invoice falls due: its window opens RENEWAL_SLACK_MS before. */
function dueMs(o: Awaited<ReturnType<typeof offer>>, k: number): number {
  const a = o.authorizations.find((x) => x.period === k);
  return Number(a?.typedData.message.validAfter) * 1000 + RENEWAL_SLACK_MS;
}

const cancelAuthorizationAbi = [
  {
    type: "function",
    name: "cancelAuthorization",
    stateMutability: "nonpayable",
    inputs: [
      { name: "authorizer", type: "address" },
      { name: "nonce", type: "bytes32" },
      { name: "signature", type: "bytes" },
    ],
    outputs: [],
  },
] as const;

/** The payer cancels one of its authorizations on the token (EIP-3009 cancelAuthorization), as its wallet would. */
async function cancelOnChain(nonce: Hex): Promise<void> {
  const account = payerAccount(live.chain, PAYER);
  const signature = await account.signTypedData({
    domain: { ...usdc.eip712, chainId: live.chain.chainId, verifyingContract: usdc.address },
    types: {
      CancelAuthorization: [
        { name: "authorizer", type: "address" },
        { name: "nonce", type: "bytes32" },
      ],
    },
    primaryType: "CancelAuthorization",
    message: { authorizer: account.address, nonce },
  });
  const data = encodeFunctionData({
    abi: cancelAuthorizationAbi,
    functionName: "cancelAuthorization",
    args: [account.address, nonce, signature],
  });
  expect((await sendAs(live.chain, account.address, { to: usdc.address, data })).status).toBe("success");
  expect(await usdc.authorizationState(account.address, nonce)).toBe(true);
}

describe("pre-authorized renewals", () => {
  it("renews three pre-signed periods by themselves; a cancelled authorization stops the next", async () => {
    const m = await liveMerchant(live.server);
    const sub = await subscribe(m);
    expect([sub.status, sub.openInvoice]).toEqual(["trialing", null]);
    const page = await (await fetch(`${live.server.baseUrl}/s/${sub.id}`)).text();
    expect(page).toContain("data-renewal-wallet");
    const o = await offer(sub.id, PAYER, 4);
    expect(o.authorizations.map((a) => a.period)).toEqual([1, 2, 3, 4]);
    expect(o.authorizations[0]?.typedData.message).toMatchObject({
      to: live.server.ctx.wallet?.hotAddress,
      value: "5000000",
    });
    const body = await signed(o, PAYER);
    const stored = await post(sub.id, body);
    expect(stored.status, stored.text).toBe(200);
    expect(stored.body.authorizations.map((a: { state: string }) => a.state)).toEqual(Array(4).fill("signed"));
    // Posted again (a retry): the same rows.
    expect((await post(sub.id, body)).body).toEqual(stored.body);
    const hotBefore = await usdc.balanceOf(live.server.ctx.wallet?.hotAddress as Hex);
    const submissionsBefore = (await outboxOf(live.server, "submission")).length;
    for (const k of [1, 2, 3]) {
      const s = await advance(m, sub.id, dueMs(o, k) + 60_000);
      expect(s.openInvoice?.period).toBe(k);
      await submitAndSettle();
      expect((await getInvoice(live.server, m.apiKey, s.openInvoice.id)).status).toBe("completed");
      expect((await renewals(sub.id))[k - 1]?.state).toBe("submitted");
    }
    const hotAfter = await usdc.balanceOf(live.server.ctx.wallet?.hotAddress as Hex);
    expect(hotAfter - hotBefore).toBe(15_000_000n);
    const sent = (await outboxOf(live.server, "submission")).slice(submissionsBefore);
    expect(sent).toHaveLength(3);
    const gas = sent.map((t) => Number(t.gas_used));
    if (process.env.PRINT_GAS === "1") process.stdout.write(`gas per pre-authorized renewal: ${gas.join(", ")}\n`);
    for (const g of gas) expect(g).toBeLessThan(120_000);

    await cancelOnChain(body.authorizations[3]?.nonce as Hex);
    let s = await advance(m, sub.id, dueMs(o, 4) + 60_000);
    expect([s.status, s.period, s.openInvoice?.period]).toEqual(["active", 3, 4]);
    await submitAndSettle();
    const handed = await live.server.ctx.store.db
      .selectFrom("wallet_authorizations")
      .select("state")
      .where("invoice_id", "=", s.openInvoice.id)
      .executeTakeFirstOrThrow();
    expect(handed.state).toBe("failed");
    expect(await outboxOf(live.server, "submission")).toHaveLength(submissionsBefore + 3);
    s = await advance(m, sub.id, Date.parse(s.currentPeriodEnd) + 60_000);
    expect([s.status, s.period, s.openInvoice?.period, s.openInvoice?.status]).toEqual(["past_due", 4, 4, "pending"]);
    await auditAndExpect(live.server);
  }, 120_000);

  it("refuses bad posts by code and stores nothing; a changed price supersedes, the merchant's cancel revokes", async () => {
    const m = await liveMerchant(live.server);
    const sub = await subscribe(m);
    const o = await offer(sub.id, PAYER, 3);
    const good = await signed(o, PAYER);
    const bad: [unknown, number, string][] = [
      [await signed(o, PAYER, { signer: 2 }), 400, "authorization_signature"],
      [await signed(o, PAYER, { change: (x) => Object.assign(x, { value: "4000000" }) }), 400, "authorization_value"],
      [
        await signed(o, PAYER, { change: (x) => Object.assign(x, { validBefore: "9999999999" }) }),
        400,
        "authorization_window",
      ],
      [
        await signed(o, PAYER, { change: (x) => Object.assign(x, { nonce: `0x${"7".repeat(64)}` }) }),
        400,
        "authorization_nonce_invalid",
      ],
      [{ ...good, authorizations: [{ ...good.authorizations[0], period: 13 }] }, 400, "renewal_period_invalid"],
      [{ ...good, authorizations: [good.authorizations[0], good.authorizations[0]] }, 400, "validation_failed"],
      [{ ...good, network: "base" }, 400, "authorization_unsupported"],
    ];
    for (const [body, status, code] of bad) expectProblem(await post(sub.id, body), status, code);
    expect(await renewals(sub.id)).toEqual([]);
    expect((await post(sub.id, good)).status).toBe(200);
    // Another wallet for periods already pre-authorized: refused, the payer's stand; the next offer skips them.
    const stranger = payer(live.chain, 2);
    const other = await signed(o, 2, {
      change: (x, k) => Object.assign(x, { from: stranger, nonce: renewalNonce(sub.id, k, stranger) }),
    });
    expectProblem(await post(sub.id, other), 409, "renewal_already_authorized");
    expect((await offer(sub.id, 2, 2)).authorizations.map((a) => a.period)).toEqual([4, 5]);

    // The price changes from period 1: its invoice asks 6 USDC, so the 5 USDC renewal is never sent.
    const dearer = await merchant(live.server, m.apiKey, "POST", "/public/v1/plans", {
      name: "Daily beans+",
      currency: "USDC",
      amount: "6",
      interval: "day",
    });
    const changed = await merchant(live.server, m.apiKey, "POST", `/public/v1/subscriptions/${sub.id}/change-plan`, {
      planId: dearer.body.id,
    });
    expect(changed.status, changed.text).toBe(200);
    const s = await advance(m, sub.id, dueMs(o, 1) + 60_000);
    expect(s.openInvoice).toMatchObject({ period: 1, amount: "6" });
    const canceled = await merchant(live.server, m.apiKey, "POST", `/public/v1/subscriptions/${sub.id}/cancel`, {
      atPeriodEnd: true,
    });
    expect(canceled.status, canceled.text).toBe(200);
    expect((await renewals(sub.id)).map((r) => r.state)).toEqual(["superseded", "revoked", "revoked"]);
    const invoiceAuthorizations = await live.server.ctx.store.db
      .selectFrom("wallet_authorizations")
      .select("id")
      .where("invoice_id", "=", s.openInvoice.id)
      .execute();
    expect(invoiceAuthorizations).toEqual([]);
    const page = await (await fetch(`${live.server.baseUrl}/s/${sub.id}`)).text();
    expect(page).toContain("not used: the price changed");
    expect(page).not.toContain("data-renewal-wallet");

    // Cancelled now after its invoice was made, before the hot wallet sent it: withdrawn, nothing sent.
    const next = await subscribe(m);
    const nextOffer = await offer(next.id, PAYER, 1);
    expect((await post(next.id, await signed(nextOffer, PAYER))).status).toBe(200);
    const made = await advance(m, next.id, dueMs(nextOffer, 1) + 60_000);
    const before = (await outboxOf(live.server, "submission")).length;
    const now = await merchant(live.server, m.apiKey, "POST", `/public/v1/subscriptions/${next.id}/cancel`, {});
    expect(now.body.status, now.text).toBe("canceled");
    await live.server.workers.loops.chainPayouts?.runOnce();
    expect((await renewals(next.id)).map((r) => r.state)).toEqual(["revoked"]);
    const withdrawn = await live.server.ctx.store.db
      .selectFrom("wallet_authorizations")
      .select("state")
      .where("invoice_id", "=", made.openInvoice.id)
      .executeTakeFirstOrThrow();
    expect(withdrawn.state).toBe("expired");
    expect(await outboxOf(live.server, "submission")).toHaveLength(before);
  });
});
