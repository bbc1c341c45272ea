// The contracts paying with a wallet relies on, on anvil: the EIP-3009 test token's receiveWithAuthorization and Permit2's witness transfer at its canonical address, signed by the test helpers.
import { encodeFunctionData, type Hex, hashDomain, parseSignature, toFunctionSelector } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PERMIT2_ADDRESS, permit2Abi } from "../../src/domain/walletAuthorizationAbi.ts";
import {
  type AuthorizationToken,
  compileFixture,
  type LocalChain,
  permit2RuntimeCode,
  startLocalChain,
  type TestToken,
} from "../support/chain.ts";
import { payer } from "../support/live.ts";
import {
  accountOf,
  approvePermit2,
  permitWitnessTransferFromData,
  receiveWithAuthorizationData,
  sendAs,
  signPermit2Witness,
  signReceiveWithAuthorization,
} from "../support/walletPayments.ts";

const PAYER = 1;
const AMOUNT = 10_000_000n;
const FAR = 4_000_000_000n;
/** Permit2's custom errors (their selectors: the call's revert data). */
const INVALID_SIGNER = toFunctionSelector("InvalidSigner()");
const INVALID_NONCE = toFunctionSelector("InvalidNonce()");

let chain: LocalChain;
let usdc: AuthorizationToken;
let usdt: TestToken;
/** Stands for the service's hot wallet: the payee of EIP-3009 and the spender of Permit2. */
let hot: Hex;
let stranger: Hex;

beforeAll(async () => {
  chain = await startLocalChain();
  // One after the other: both are sent from the first account, each with the next nonce.
  usdc = await chain.deployAuthorizationToken();
  usdt = await chain.deployToken();
  await chain.installPermit2();
  hot = payer(chain, 2);
  stranger = payer(chain, 3);
  await chain.waitForReceipt(await usdc.mint(payer(chain, PAYER), 5n * AMOUNT));
  await chain.waitForReceipt(await usdt.mint(payer(chain, PAYER), 5n * AMOUNT));
}, 60_000);

afterAll(async () => {
  await chain?.close();
});

/** The revert reason of a call from `from`, or null when it would succeed. */
async function revertOf(from: Hex, to: Hex, data: Hex): Promise<string | null> {
  try {
    await chain.client.call({ account: accountOf(chain, from), to, data });
    return null;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

describe("EIP-3009 test token", () => {
  it("moves the tokens when the payee submits, once: the nonce is spent and a replay reverts", async () => {
    // ERC-5267: the domain a wallet or the service can read from the token itself.
    const domain = await chain.client.readContract({
      address: usdc.address,
      abi: eip712DomainAbi,
      functionName: "eip712Domain",
    });
    expect(domain.slice(1, 5)).toEqual(["USD Coin", "2", BigInt(chain.chainId), usdc.address]);
    const { authorization, signature } = await signReceiveWithAuthorization(chain, PAYER, usdc, {
      to: hot,
      value: AMOUNT,
      validBefore: FAR,
    });
    const data = receiveWithAuthorizationData(authorization, signature);
    expect(await revertOf(stranger, usdc.address, data)).toContain("caller must be the payee");
    const before = await usdc.balanceOf(payer(chain, PAYER));
    const sent = await sendAs(chain, hot, { to: usdc.address, data });
    expect(sent.status).toBe("success");
    expect(await usdc.balanceOf(hot)).toBe(AMOUNT);
    expect(await usdc.balanceOf(payer(chain, PAYER))).toBe(before - AMOUNT);
    expect(await usdc.authorizationState(authorization.from, authorization.nonce)).toBe(true);
    expect(await revertOf(hot, usdc.address, data)).toContain("authorization is used or canceled");
  });

  it("refuses a signature by another than `from`, and a window that has closed", async () => {
    const other = await signReceiveWithAuthorization(chain, 4, usdc, { to: hot, value: AMOUNT, validBefore: FAR });
    const forged = receiveWithAuthorizationData({ ...other.authorization, from: payer(chain, PAYER) }, other.signature);
    expect(await revertOf(hot, usdc.address, forged)).toContain("invalid signature");
    const expired = await signReceiveWithAuthorization(chain, PAYER, usdc, { to: hot, value: AMOUNT, validBefore: 1n });
    const late = receiveWithAuthorizationData(expired.authorization, expired.signature);
    expect(await revertOf(hot, usdc.address, late)).toContain("authorization is expired");
  });

  it("takes the signature as (v, r, s) too, as USDC does", async () => {
    const { authorization: a, signature } = await signReceiveWithAuthorization(chain, PAYER, usdc, {
      to: hot,
      value: 1n,
      validBefore: FAR,
    });
    const { v, r, s } = parseSignature(signature);
    const data = encodeFunctionData({
      abi: compileFixture("AuthorizationToken").abi,
      functionName: "receiveWithAuthorization",
      args: [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce, Number(v), r, s],
    });
    expect((await sendAs(chain, hot, { to: usdc.address, data })).status).toBe("success");
    expect(await usdc.authorizationState(a.from, a.nonce)).toBe(true);
  });
});

describe("Permit2 at its canonical address", () => {
  it("has the domain viem computes for this chain", async () => {
    expect(await chain.client.getCode({ address: PERMIT2_ADDRESS })).toBe(permit2RuntimeCode());
    expect(await chain.installPermit2()).toBe(PERMIT2_ADDRESS);
    const separator = await chain.client.readContract({
      address: PERMIT2_ADDRESS,
      abi: permit2Abi,
      functionName: "DOMAIN_SEPARATOR",
    });
    const domain = { name: "Permit2", chainId: BigInt(chain.chainId), verifyingContract: PERMIT2_ADDRESS };
    expect(separator).toBe(hashDomain({ domain, types: { EIP712Domain: permit2DomainTypes } }));
  });

  it("moves the tokens to the spender for a witness signature, once", async () => {
    await approvePermit2(chain, PAYER, usdt.address);
    const { permit, signature } = await signPermit2Witness(chain, PAYER, {
      token: usdt.address,
      amount: AMOUNT,
      spender: hot,
      deadline: FAR,
      invoiceId: "inv_wallet_1",
    });
    const data = permitWitnessTransferFromData(permit, signature);
    // Another spender, or another invoice than the one signed, does not match the signature.
    expect(await revertOf(stranger, PERMIT2_ADDRESS, data)).toContain(INVALID_SIGNER);
    const otherInvoice = permitWitnessTransferFromData({ ...permit, invoiceId: "inv_wallet_2" }, signature);
    expect(await revertOf(hot, PERMIT2_ADDRESS, otherInvoice)).toContain(INVALID_SIGNER);
    const sent = await sendAs(chain, hot, { to: PERMIT2_ADDRESS, data });
    expect(sent.status).toBe("success");
    expect(await usdt.balanceOf(hot)).toBe(AMOUNT);
    expect(await revertOf(hot, PERMIT2_ADDRESS, data)).toContain(INVALID_NONCE);
    const word = await chain.client.readContract({
      address: PERMIT2_ADDRESS,
      abi: permit2Abi,
      functionName: "nonceBitmap",
      args: [permit.from, permit.nonce >> 8n],
    });
    expect((word >> (permit.nonce & 255n)) & 1n).toBe(1n);
  });
});

const permit2DomainTypes = [
  { name: "name", type: "string" },
  { name: "chainId", type: "uint256" },
  { name: "verifyingContract", type: "address" },
] as const;

const eip712DomainAbi = [
  {
    type: "function",
    name: "eip712Domain",
    stateMutability: "view",
    inputs: [],
    outputs: [
      { name: "fields", type: "bytes1" },
      { name: "name", type: "string" },
      { name: "version", type: "string" },
      { name: "chainId", type: "uint256" },
      { name: "verifyingContract", type: "address" },
      { name: "salt", type: "bytes32" },
      { name: "extensions", type: "uint256[]" },
    ],
  },
] as const;
