// Paying with a wallet on chain (product §28): a payer's signed authorization checked against the signature and the chain before anything is sent, then submitted by the hot wallet as the outbox's `submission` purpose and settled as the invoice's payment once deep.
import {
  decodeFunctionResult,
  encodeFunctionData,
  erc20Abi,
  type Hex,
  isAddressEqual,
  parseSignature,
  recoverTypedDataAddress,
} from "viem";
import type { ChainClient } from "../domain/chain.ts";
import { err, ok, type Result } from "../domain/result.ts";
import {
  type AuthorizationRefusal,
  type AuthorizationTerms,
  type CatalogAuthorization,
  PERMIT_WITNESS_TYPES,
  PERMIT2_ADDRESS,
  PERMIT2_WITNESS_TYPE_STRING,
  RECEIVE_WITH_AUTHORIZATION_TYPES,
  type SignedAuthorization,
} from "../domain/walletAuthorization.ts";

export const EIP3009_ABI = [
  {
    type: "function",
    name: "receiveWithAuthorization",
    stateMutability: "nonpayable",
    inputs: [
      { name: "from", type: "address" },
      { name: "to", type: "address" },
      { name: "value", type: "uint256" },
      { name: "validAfter", type: "uint256" },
      { name: "validBefore", type: "uint256" },
      { name: "nonce", type: "bytes32" },
      { name: "v", type: "uint8" },
      { name: "r", type: "bytes32" },
      { name: "s", type: "bytes32" },
    ],
    outputs: [],
  },
  {
    type: "function",
    name: "authorizationState",
    stateMutability: "view",
    inputs: [
      { name: "authorizer", type: "address" },
      { name: "nonce", type: "bytes32" },
    ],
    outputs: [{ type: "bool" }],
  },
] as const;

export const PERMIT2_ABI = [
  {
    type: "function",
    name: "permitWitnessTransferFrom",
    stateMutability: "nonpayable",
    inputs: [
      {
        name: "permit",
        type: "tuple",
        components: [
          {
            name: "permitted",
            type: "tuple",
            components: [
              { name: "token", type: "address" },
              { name: "amount", type: "uint256" },
            ],
          },
          { name: "nonce", type: "uint256" },
          { name: "deadline", type: "uint256" },
        ],
      },
      {
        name: "transferDetails",
        type: "tuple",
        components: [
          { name: "to", type: "address" },
          { name: "requestedAmount", type: "uint256" },
        ],
      },
      { name: "owner", type: "address" },
      { name: "witness", type: "bytes32" },
      { name: "witnessTypeString", type: "string" },
      { name: "signature", type: "bytes" },
    ],
    outputs: [],
  },
  {
    type: "function",
    name: "nonceBitmap",
    stateMutability: "view",
    inputs: [
      { name: "owner", type: "address" },
      { name: "wordPos", type: "uint256" },
    ],
    outputs: [{ type: "uint256" }],
  },
] as const;

/** A refusal of the checks, or a node that did not answer them. */
export type CheckRefusal = AuthorizationRefusal | "node_unavailable";

/** The payer's full typed data: the terms offered plus the fields the payer's wallet added. */
function signedTypedData(authorization: CatalogAuthorization, terms: AuthorizationTerms, s: SignedAuthorization) {
  if (authorization.kind === "eip3009") {
    return {
      domain: {
        name: authorization.name,
        version: authorization.version,
        chainId: terms.chainId,
        verifyingContract: terms.token as Hex,
      },
      types: { ReceiveWithAuthorization: RECEIVE_WITH_AUTHORIZATION_TYPES },
      primaryType: "ReceiveWithAuthorization" as const,
      message: {
        from: s.from as Hex,
        to: terms.hotWallet as Hex,
        value: terms.value,
        validAfter: s.validAfter,
        validBefore: s.validBefore,
        nonce: s.nonce as Hex,
      },
    };
  }
  return {
    domain: { name: "Permit2", chainId: terms.chainId, verifyingContract: PERMIT2_ADDRESS as Hex },
    types: PERMIT_WITNESS_TYPES,
    primaryType: "PermitWitnessTransferFrom" as const,
    message: {
      permitted: { token: terms.token as Hex, amount: terms.value },
      spender: terms.hotWallet as Hex,
      nonce: BigInt(s.nonce),
      deadline: s.validBefore,
      witness: { id: terms.invoiceId },
    },
  };
}

/** Whether the signature recovers `from` for exactly these terms (an EOA's signature; a wrong amount recovers another address). */
async function signatureRecovers(
  authorization: CatalogAuthorization,
  terms: AuthorizationTerms,
  s: SignedAuthorization,
): Promise<boolean> {
  try {
    const signer = await recoverTypedDataAddress({
      ...signedTypedData(authorization, terms, s),
      signature: s.signature as Hex,
    } as Parameters<typeof recoverTypedDataAddress>[0]);
    return isAddressEqual(signer, s.from as Hex);
  } catch {
    return false;
  }
}

async function readCall<T>(client: ChainClient, to: string, data: Hex, decode: (answer: Hex) => T) {
  const answer = await client.call({ from: PERMIT2_ADDRESS as Hex, to: to as Hex, data });
  if (!answer.ok) return null;
  try {
    return { value: decode(answer.value) };
  } catch {
    return null;
  }
}

/** Whether the token's (EIP-3009) or Permit2's (its bitmap) nonce is still unused; null: no answer. */
async function nonceUnused(
  client: ChainClient,
  kind: CatalogAuthorization["kind"],
  token: string,
  s: SignedAuthorization,
) {
  if (kind === "eip3009") {
    const data = encodeFunctionData({
      abi: EIP3009_ABI,
      functionName: "authorizationState",
      args: [s.from as Hex, s.nonce as Hex],
    });
    const used = await readCall(client, token, data, (a) =>
      decodeFunctionResult({ abi: EIP3009_ABI, functionName: "authorizationState", data: a }),
    );
    return used === null ? null : !used.value;
  }
  const nonce = BigInt(s.nonce);
  const data = encodeFunctionData({
    abi: PERMIT2_ABI,
    functionName: "nonceBitmap",
    args: [s.from as Hex, nonce >> 8n],
  });
  const bitmap = await readCall(client, PERMIT2_ADDRESS, data, (a) =>
    decodeFunctionResult({ abi: PERMIT2_ABI, functionName: "nonceBitmap", data: a }),
  );
  return bitmap === null ? null : (bitmap.value & (1n << (nonce & 255n))) === 0n;
}

/** The payer's Permit2 allowance on the token; null: no answer. */
async function permit2Allowance(client: ChainClient, token: string, owner: string): Promise<bigint | null> {
  const data = encodeFunctionData({ abi: erc20Abi, functionName: "allowance", args: [owner as Hex, PERMIT2_ADDRESS] });
  const answer = await readCall(client, token, data, (a) =>
    decodeFunctionResult({ abi: erc20Abi, functionName: "allowance", data: a }),
  );
  return answer?.value ?? null;
}

/**
 * The checks before anything is sent (product §28), in order, each refusal its own code: the
 * signature recovers `from` for these terms, the nonce is unused, the payer holds the amount, and
 * (Permit2) has approved Permit2 for it. The window is the caller's (src/domain).
 */
export async function checkSignedAuthorization(
  client: ChainClient,
  authorization: CatalogAuthorization,
  terms: AuthorizationTerms,
  signed: SignedAuthorization,
): Promise<Result<true, CheckRefusal>> {
  if (!(await signatureRecovers(authorization, terms, signed)))
    return err("authorization_signature", "the signature is not the payer's for these terms");
  const unused = await nonceUnused(client, authorization.kind, terms.token, signed);
  if (unused === null) return err("node_unavailable", "the node did not answer the nonce check");
  if (!unused) return err("authorization_nonce_used", "this authorization's nonce was used or cancelled");
  const balance = await client.tokenBalance(terms.token as Hex, signed.from as Hex);
  if (!balance.ok) return err("node_unavailable", "the node did not answer the balance check");
  if (balance.value < terms.value) return err("authorization_balance", "the payer does not hold the amount");
  if (authorization.kind === "permit2") {
    const allowance = await permit2Allowance(client, terms.token, signed.from);
    if (allowance === null) return err("node_unavailable", "the node did not answer the allowance check");
    if (allowance < terms.value)
      return err("authorization_allowance", "the payer has not approved Permit2 for the amount");
  }
  return ok(true);
}

/** A stored authorization's submission call: the hot wallet calls the token (EIP-3009) or Permit2. */
export function submissionCall(a: {
  kind: CatalogAuthorization["kind"];
  token: string;
  from: string;
  hotWallet: string;
  value: bigint;
  nonce: string;
  validAfter: bigint;
  validBefore: bigint;
  signature: string;
  invoiceId: string;
  witness: Hex;
}): { to: Hex; value: bigint; data: Hex } {
  if (a.kind === "eip3009") {
    const { r, s, v, yParity } = parseSignature(a.signature as Hex);
    const data = encodeFunctionData({
      abi: EIP3009_ABI,
      functionName: "receiveWithAuthorization",
      args: [
        a.from as Hex,
        a.hotWallet as Hex,
        a.value,
        a.validAfter,
        a.validBefore,
        a.nonce as Hex,
        Number(v ?? BigInt(yParity + 27)),
        r,
        s,
      ],
    });
    return { to: a.token as Hex, value: 0n, data };
  }
  const data = encodeFunctionData({
    abi: PERMIT2_ABI,
    functionName: "permitWitnessTransferFrom",
    args: [
      { permitted: { token: a.token as Hex, amount: a.value }, nonce: BigInt(a.nonce), deadline: a.validBefore },
      { to: a.hotWallet as Hex, requestedAmount: a.value },
      a.from as Hex,
      a.witness,
      PERMIT2_WITNESS_TYPE_STRING,
      a.signature as Hex,
    ],
  });
  return { to: PERMIT2_ADDRESS as Hex, value: 0n, data };
}

const DOMAIN_ABI = [
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
  { type: "function", name: "name", stateMutability: "view", inputs: [], outputs: [{ type: "string" }] },
  { type: "function", name: "version", stateMutability: "view", inputs: [], outputs: [{ type: "string" }] },
] as const;

/**
 * The token's EIP-712 domain name and version as the contract says them: ERC-5267's
 * `eip712Domain()`, else `name()` and `version()` (USDC's FiatTokenV2 has no ERC-5267). Null: the
 * contract answers neither (or the node did not answer: `answered` false).
 */
export async function readTokenDomain(
  client: ChainClient,
  token: string,
): Promise<{ answered: boolean; domain: { name: string; version: string } | null }> {
  const read = (functionName: "eip712Domain" | "name" | "version") =>
    readCall(
      client,
      token,
      encodeFunctionData({ abi: DOMAIN_ABI, functionName } as never),
      (a) => decodeFunctionResult({ abi: DOMAIN_ABI, functionName, data: a } as never) as unknown,
    );
  const full = await read("eip712Domain");
  if (full !== null) {
    const [, name, version] = full.value as readonly [Hex, string, string, bigint, Hex, Hex, readonly bigint[]];
    return { answered: true, domain: { name, version } };
  }
  const [name, version] = await Promise.all([read("name"), read("version")]);
  if (name === null || version === null) {
    const head = await client.headBlockNumber();
    return { answered: head.ok, domain: null };
  }
  return { answered: true, domain: { name: name.value as string, version: version.value as string } };
}
