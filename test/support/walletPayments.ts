// Paying with a wallet in tests (issue 45): a payer's EIP-3009 and Permit2 signatures made as a wallet makes them (eth_signTypedData_v4), the one-time Permit2 approval, and the calls the hot wallet submits.
import { createWalletClient, encodeFunctionData, erc20Abi, type Hex, hashStruct, http, maxUint256, toHex } from "viem";
import { type HDAccount, mnemonicToAccount } from "viem/accounts";
import {
  eip3009Abi,
  INVOICE_WITNESS_TYPE_STRING,
  invoiceWitnessTypes,
  PERMIT2_ADDRESS,
  permit2Abi,
  permitWitnessTransferFromTypes,
  receiveWithAuthorizationTypes,
} from "../../src/domain/walletAuthorizationAbi.ts";
import { CHAIN_MNEMONIC, type LocalChain } from "./chain.ts";

/** The key of the node's funded account `index` (payer(chain, index) is its address): it signs here, as a wallet would. */
export function payerAccount(chain: LocalChain, index: number): HDAccount {
  const account = mnemonicToAccount(CHAIN_MNEMONIC, { addressIndex: index });
  if (account.address.toLowerCase() !== chain.accounts[index]?.toLowerCase()) {
    throw new Error(`no account ${index} on the local chain`);
  }
  return account;
}

/** The key of one of the node's accounts, by address. */
export function accountOf(chain: LocalChain, address: Hex): HDAccount {
  const index = chain.accounts.findIndex((a) => a.toLowerCase() === address.toLowerCase());
  if (index < 0) throw new Error(`${address} is not an account of the local chain`);
  return payerAccount(chain, index);
}

/** 32 random bytes, as the payer's page makes an EIP-3009 nonce. */
export function randomAuthorizationNonce(): Hex {
  return toHex(crypto.getRandomValues(new Uint8Array(32)));
}

/** A random uint256, as the payer's page makes a Permit2 nonce (Permit2's nonces are unordered). */
export function randomPermit2Nonce(): bigint {
  return BigInt(randomAuthorizationNonce());
}

export interface ReceiveAuthorization {
  from: Hex;
  to: Hex;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: Hex;
}

/** The token an EIP-3009 authorization is signed for: its address and EIP-712 domain. */
export interface Eip3009Token {
  address: Hex;
  eip712: { name: string; version: string };
}

/** The typed data a payer signs for EIP-3009 (the shape of GET /pay/{id}/status's `typedData`, with bigints). */
export function receiveAuthorizationTypedData(chainId: number, token: Eip3009Token, message: ReceiveAuthorization) {
  return {
    domain: {
      name: token.eip712.name,
      version: token.eip712.version,
      chainId: BigInt(chainId),
      verifyingContract: token.address,
    },
    types: receiveWithAuthorizationTypes,
    primaryType: "ReceiveWithAuthorization" as const,
    message,
  };
}

/**
 * The payer (the node's account `payerIndex`) signs a ReceiveWithAuthorization: `value` to `to`,
 * valid from `validAfter` (0 unless told) until `validBefore`, with a random nonce unless told.
 */
export async function signReceiveWithAuthorization(
  chain: LocalChain,
  payerIndex: number,
  token: Eip3009Token,
  wanted: { to: Hex; value: bigint; validBefore: bigint; validAfter?: bigint; nonce?: Hex },
): Promise<{ authorization: ReceiveAuthorization; signature: Hex }> {
  const account = payerAccount(chain, payerIndex);
  const authorization: ReceiveAuthorization = {
    from: account.address,
    to: wanted.to,
    value: wanted.value,
    validAfter: wanted.validAfter ?? 0n,
    validBefore: wanted.validBefore,
    nonce: wanted.nonce ?? randomAuthorizationNonce(),
  };
  const signature = await account.signTypedData(receiveAuthorizationTypedData(chain.chainId, token, authorization));
  return { authorization, signature };
}

/** The hot wallet's call: `receiveWithAuthorization(from, to, value, validAfter, validBefore, nonce, signature)` (to must send it). */
export function receiveWithAuthorizationData(authorization: ReceiveAuthorization, signature: Hex): Hex {
  const { from, to, value, validAfter, validBefore, nonce } = authorization;
  return encodeFunctionData({
    abi: eip3009Abi,
    functionName: "receiveWithAuthorization",
    args: [from, to, value, validAfter, validBefore, nonce, signature],
  });
}

export interface Permit2Authorization {
  /** The payer (Permit2's `owner`). */
  from: Hex;
  token: Hex;
  amount: bigint;
  /** Who may submit it, and whom the tokens go to here: the hot wallet. */
  spender: Hex;
  nonce: bigint;
  deadline: bigint;
  invoiceId: string;
}

/** The witness hash Permit2 is given: hashStruct of Invoice(string id). */
export function invoiceWitness(invoiceId: string): Hex {
  return hashStruct({ data: { id: invoiceId }, primaryType: "Invoice", types: invoiceWitnessTypes });
}

/** The typed data a payer signs for Permit2 (the shape of GET /pay/{id}/status's `typedData`, with bigints). */
export function permit2TypedData(chainId: number, permit: Permit2Authorization) {
  return {
    domain: { name: "Permit2", chainId: BigInt(chainId), verifyingContract: PERMIT2_ADDRESS },
    types: permitWitnessTransferFromTypes,
    primaryType: "PermitWitnessTransferFrom" as const,
    message: {
      permitted: { token: permit.token, amount: permit.amount },
      spender: permit.spender,
      nonce: permit.nonce,
      deadline: permit.deadline,
      witness: { id: permit.invoiceId },
    },
  };
}

/** The payer (the node's account `payerIndex`) signs a PermitWitnessTransferFrom of `amount` for the invoice, random nonce unless told. */
export async function signPermit2Witness(
  chain: LocalChain,
  payerIndex: number,
  wanted: { token: Hex; amount: bigint; spender: Hex; deadline: bigint; invoiceId: string; nonce?: bigint },
): Promise<{ permit: Permit2Authorization; signature: Hex }> {
  const account = payerAccount(chain, payerIndex);
  const permit: Permit2Authorization = {
    from: account.address,
    token: wanted.token,
    amount: wanted.amount,
    spender: wanted.spender,
    nonce: wanted.nonce ?? randomPermit2Nonce(),
    deadline: wanted.deadline,
    invoiceId: wanted.invoiceId,
  };
  const signature = await account.signTypedData(permit2TypedData(chain.chainId, permit));
  return { permit, signature };
}

/** The spender's call: the whole amount to `to` (the hot wallet, by default the spender itself). */
export function permitWitnessTransferFromData(permit: Permit2Authorization, signature: Hex, to = permit.spender): Hex {
  return encodeFunctionData({
    abi: permit2Abi,
    functionName: "permitWitnessTransferFrom",
    args: [
      { permitted: { token: permit.token, amount: permit.amount }, nonce: permit.nonce, deadline: permit.deadline },
      { to, requestedAmount: permit.amount },
      permit.from,
      invoiceWitness(permit.invoiceId),
      INVOICE_WITNESS_TYPE_STRING,
      signature,
    ],
  });
}

/** Sends a transaction from one of the node's accounts (signed here) and waits for it; a revert is answered, not thrown. */
export async function sendAs(
  chain: LocalChain,
  from: Hex,
  request: { to: Hex; data: Hex; gas?: bigint },
): Promise<{ hash: Hex; status: "success" | "reverted"; gasUsed: bigint }> {
  const account = accountOf(chain, from);
  const wallet = createWalletClient({ account, transport: http(chain.url, { retryCount: 0 }) });
  const hash = await wallet.sendTransaction({ ...request, chain: null });
  const receipt = await chain.client.waitForTransactionReceipt({ hash, timeout: 20_000, pollingInterval: 50 });
  return { hash, status: receipt.status, gasUsed: receipt.gasUsed };
}

/** The payer approves Permit2 for `amount` of the token (unlimited unless told), as the page asks once; waits for it. */
export async function approvePermit2(
  chain: LocalChain,
  payerIndex: number,
  token: Hex,
  amount: bigint = maxUint256,
): Promise<{ hash: Hex; gasUsed: bigint }> {
  const data = encodeFunctionData({ abi: erc20Abi, functionName: "approve", args: [PERMIT2_ADDRESS, amount] });
  const sent = await sendAs(chain, payerAccount(chain, payerIndex).address, { to: token, data });
  if (sent.status !== "success") throw new Error("the approval of Permit2 reverted");
  return { hash: sent.hash, gasUsed: sent.gasUsed };
}
