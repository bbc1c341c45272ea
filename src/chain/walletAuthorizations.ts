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
  isEip3009Kind,
  type SignedAuthorization,
  type SignedAuthorizationKind,
} from "../domain/walletAuthorization.ts";
import {
  eip3009Abi,
  INVOICE_WITNESS_TYPE_STRING,
  PERMIT2_ADDRESS,
  permit2Abi,
  permitWitnessTransferFromTypes,
  receiveWithAuthorizationTypes,
  tokenDomainAbi,
  transferWithAuthorizationTypes,
} from "../domain/walletAuthorizationAbi.ts";

/** A refusal of the checks, or a node that did not answer them. */
export type CheckRefusal = AuthorizationRefusal | "node_unavailable";

/** The payer's full typed data: the terms offered plus the fields the payer's wallet added. */
function signedTypedData(authorization: CatalogAuthorization, terms: AuthorizationTerms, s: SignedAuthorization) {
  if (authorization.kind === "eip3009") {
    const message = {
      from: s.from as Hex,
      to: terms.hotWallet as Hex,
      value: terms.value,
      validAfter: s.validAfter,
      validBefore: s.validBefore,
      nonce: s.nonce as Hex,
    };
    const domain = {
      name: authorization.name,
      version: authorization.version,
      chainId: terms.chainId,
      verifyingContract: terms.token as Hex,
    };
    // x402's exact scheme signs TransferWithAuthorization; the payer's page, ReceiveWithAuthorization.
    if (s.kind === "eip3009_transfer") {
      return {
        domain,
        types: transferWithAuthorizationTypes,
        primaryType: "TransferWithAuthorization" as const,
        message,
      };
    }
    return { domain, types: receiveWithAuthorizationTypes, primaryType: "ReceiveWithAuthorization" as const, message };
  }
  return {
    domain: { name: "Permit2", chainId: terms.chainId, verifyingContract: PERMIT2_ADDRESS as Hex },
    types: permitWitnessTransferFromTypes,
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
export async function signatureRecovers(
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
async function nonceUnused(client: ChainClient, kind: SignedAuthorizationKind, token: string, s: SignedAuthorization) {
  if (isEip3009Kind(kind)) {
    const data = encodeFunctionData({
      abi: eip3009Abi,
      functionName: "authorizationState",
      args: [s.from as Hex, s.nonce as Hex],
    });
    const used = await readCall(client, token, data, (a) =>
      decodeFunctionResult({ abi: eip3009Abi, functionName: "authorizationState", data: a }),
    );
    return used === null ? null : !used.value;
  }
  const nonce = BigInt(s.nonce);
  const data = encodeFunctionData({
    abi: permit2Abi,
    functionName: "nonceBitmap",
    args: [s.from as Hex, nonce >> 8n],
  });
  const bitmap = await readCall(client, PERMIT2_ADDRESS, data, (a) =>
    decodeFunctionResult({ abi: permit2Abi, functionName: "nonceBitmap", data: a }),
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
  const unused = await nonceUnused(client, signed.kind, terms.token, signed);
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
  kind: SignedAuthorizationKind;
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
  if (isEip3009Kind(a.kind)) {
    const { r, s, v, yParity } = parseSignature(a.signature as Hex);
    const data = encodeFunctionData({
      abi: eip3009Abi,
      // Receive: only `to` (the hot wallet) may submit it. Transfer (x402): anyone may, `to` is still the hot wallet.
      functionName: a.kind === "eip3009" ? "receiveWithAuthorization" : "transferWithAuthorization",
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
    abi: permit2Abi,
    functionName: "permitWitnessTransferFrom",
    args: [
      { permitted: { token: a.token as Hex, amount: a.value }, nonce: BigInt(a.nonce), deadline: a.validBefore },
      { to: a.hotWallet as Hex, requestedAmount: a.value },
      a.from as Hex,
      a.witness,
      INVOICE_WITNESS_TYPE_STRING,
      a.signature as Hex,
    ],
  });
  return { to: PERMIT2_ADDRESS as Hex, value: 0n, data };
}

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
      encodeFunctionData({ abi: tokenDomainAbi, functionName } as never),
      (a) => decodeFunctionResult({ abi: tokenDomainAbi, functionName, data: a } as never) as unknown,
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
