// Payers' signed authorizations as a purpose of the hot wallet's outbox (product §26, §28): the planner submits what is accepted, the handler settles it as the invoice's payment once deep; the outbox does everything in between.
import { type Hex, hashStruct, isAddressEqual, keccak256, toBytes } from "viem";
import type { ChainLog, ChainReceipt, TransferLog } from "../domain/chain.ts";
import { SignerError } from "../domain/chain.ts";
import { permitWitnessTransferFromTypes } from "../domain/walletAuthorizationAbi.ts";
import type { HotTransaction } from "../store/hotTransactions.ts";
import { hotTransactionsOf, postOperatorGas } from "../store/hotTransactions.ts";
import { lockInvoice } from "../store/invoices.ts";
import type { Store, Tx } from "../store/store.ts";
import {
  acceptedAuthorizations,
  authorizationsInState,
  findAuthorization,
  moveAuthorization,
  type WalletAuthorization,
} from "../store/walletAuthorizations.ts";
import {
  broadcastHotTransaction,
  crash,
  type HotChain,
  type HotTxRequest,
  type OutboxOptions,
  storeHotTransactions,
  walletNow,
} from "./outbox.ts";
import type { HotTxHandler } from "./outboxFollowing.ts";
import type { SettleChainPayment } from "./scanner.ts";
import { submissionCall } from "./walletAuthorizations.ts";

/** An authorization closer than this to its end is not submitted: it could not be mined in time. */
const SUBMIT_MARGIN_SECONDS = 30n;
const GAS_HEADROOM_PERCENT = 120n;
const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";

/** The call that submits `a` from the hot wallet. */
export function callOf(a: WalletAuthorization, hotWallet: string) {
  const witness = hashStruct({
    data: { id: a.invoiceId },
    primaryType: "Invoice",
    types: permitWitnessTransferFromTypes,
  });
  return submissionCall({ ...a, hotWallet, witness });
}

/**
 * One pass of a network: each accepted authorization (at most `limit`) whose window still leaves
 * time is estimated, claimed (accepted → submitted, a compare-and-set), stored and broadcast; one
 * whose window is closing expires (the invoice stays payable by transfer), one whose call would
 * revert fails and sends nothing.
 */
export async function submitWalletAuthorizations(
  store: Store,
  chain: HotChain,
  options: OutboxOptions & { batchSize: number; settlePayment?: SettleChainPayment },
): Promise<number> {
  const resolved = await resolveContested(store, chain, options);
  const accepted = await acceptedAuthorizations(store, chain.network, options.batchSize);
  if (accepted.length === 0) return resolved;
  const at = options.now().toISOString();
  const nowSeconds = BigInt(Math.floor(options.now().getTime() / 1000));
  const requests: HotTxRequest[] = [];
  let moved = 0;
  for (const a of accepted) {
    if (a.validBefore < nowSeconds + SUBMIT_MARGIN_SECONDS) {
      if (await store.transaction((tx) => moveAuthorization(tx, a, "expired", at))) moved++;
      continue;
    }
    const call = callOf(a, chain.hot.address);
    const estimate = await chain.client.estimateGas({ from: chain.hot.address, ...call });
    if (!estimate.ok) {
      // A node that answers a revert says the call cannot succeed now; any other failure says nothing.
      if (estimate.error !== "node_error" || !/revert/i.test(estimate.detail ?? "")) return moved;
      // Another may have submitted a TransferWithAuthorization first: searched for, not failed.
      const to = a.kind === "eip3009_transfer" ? "contested" : "failed";
      const failed = await store.transaction((tx) => moveAuthorization(tx, a, to, at, estimate.detail ?? null));
      if (failed) moved++;
      continue;
    }
    requests.push({
      purpose: "submission",
      purposeId: a.id,
      call,
      gas: (estimate.value * GAS_HEADROOM_PERCENT) / 100n,
      tokens: null,
      claim: (tx) => moveAuthorization(tx, a, "submitted", at),
    });
  }
  return resolved + moved + (await storeAndBroadcast(store, chain, requests, options));
}

async function storeAndBroadcast(
  store: Store,
  chain: HotChain,
  requests: HotTxRequest[],
  options: OutboxOptions,
): Promise<number> {
  if (requests.length === 0) return 0;
  const wallet = await walletNow(chain);
  if (wallet === null) return 0;
  let stored: HotTransaction[];
  try {
    stored = await storeHotTransactions(store, chain, requests, {
      wallet,
      reserve: "other",
      at: options.now().toISOString(),
      log: options.log,
    });
  } catch (error) {
    // A signer that did not sign: nothing stored, the authorizations wait for the next pass.
    if (!(error instanceof SignerError)) throw error;
    options.log.warn({ network: chain.network, code: error.code }, "submission: the signer did not sign");
    return 0;
  }
  crash("after_sign", options);
  // A refused broadcast is no failure: the outbox's next follow broadcasts the same bytes again.
  for (const t of stored) await broadcastHotTransaction(store, chain, t, options);
  return stored.length;
}

/** The submission's transfer of the payer's tokens to the hot wallet among the receipt's logs. */
function paymentLog(logs: readonly ChainLog[] | undefined, a: WalletAuthorization, hotWallet: string) {
  return (logs ?? []).find(
    (l) =>
      l.topics[0] === TRANSFER_TOPIC &&
      l.topics.length === 3 &&
      isAddressEqual(l.address, a.token as Hex) &&
      isAddressEqual(`0x${(l.topics[1] ?? "").slice(26)}`, a.from as Hex) &&
      isAddressEqual(`0x${(l.topics[2] ?? "").slice(26)}`, hotWallet as Hex),
  );
}

async function settleSubmission(
  tx: Tx,
  deps: { settle: SettleChainPayment; hotWallet: string },
  mined: HotTransaction,
  receipt: ChainReceipt,
  at: string,
): Promise<void> {
  const a = await findAuthorization(tx, mined.purposeId);
  if (a === null || a.state !== "submitted") return;
  if (receipt.status !== "success") {
    // Anyone may submit a TransferWithAuthorization: a revert may mean another's transaction moved
    // the tokens to the hot wallet first, which must not go uncredited (resolveContested).
    const to = a.kind === "eip3009_transfer" ? "contested" : "failed";
    await moveAuthorization(tx, a, to, at, "the submission reverted");
    return;
  }
  const log = paymentLog(receipt.logs, a, deps.hotWallet);
  const place = { txHash: mined.hash, logIndex: log?.logIndex ?? null, blockNumber: receipt.blockNumber };
  await recordSignedPayment(
    tx,
    { settle: deps.settle, a, network: mined.network, blockHash: receipt.blockHash, at },
    place,
  );
}

/** The authorization's payment, recorded at the transfer that moved its tokens, and the authorization settled. */
async function recordSignedPayment(
  tx: Tx,
  s: { settle: SettleChainPayment; a: WalletAuthorization; network: string; blockHash: string; at: string },
  place: { txHash: string; logIndex: number | null; blockNumber: bigint },
): Promise<void> {
  const invoice = await lockInvoice(tx, s.a.invoiceId);
  if (invoice === null) return;
  const event = {
    place: { network: s.network, ...place, blockHash: s.blockHash },
    amountMinor: s.a.value,
    fromAddress: s.a.from,
    confirmed: true,
    arrivedAt: s.at,
    screening: "pending" as const,
  };
  await s.settle(tx, invoice, event, s.at);
  await moveAuthorization(tx, s.a, "settled", s.at);
}

/** EIP-3009's event of a used authorization: AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce). */
const AUTHORIZATION_USED_TOPIC = keccak256(toBytes("AuthorizationUsed(address,bytes32)"));
/** Transfers of the same amount from the payer to the hot wallet looked at per pass (each a receipt read). */
const MAX_CANDIDATES = 10;

/**
 * The transfer whose transaction used exactly this authorization (its AuthorizationUsed event names
 * the payer and the nonce): another transfer of the same amount to the hot wallet is not it.
 * Undefined: none did; "unknown": the node did not answer.
 */
async function usedThisAuthorization(chain: HotChain, a: WalletAuthorization, candidates: readonly TransferLog[]) {
  for (const l of candidates) {
    const receipt = await chain.client.receipt(l.transactionHash);
    if (!receipt.ok) return "unknown" as const;
    const used = (receipt.value?.logs ?? []).some(
      (log) =>
        log.topics[0] === AUTHORIZATION_USED_TOPIC &&
        isAddressEqual(log.address, a.token as Hex) &&
        isAddressEqual(`0x${(log.topics[1] ?? "").slice(26)}`, a.from as Hex) &&
        log.topics[2]?.toLowerCase() === a.nonce.toLowerCase(),
    );
    if (used) return l;
  }
  return undefined;
}

/** Blocks searched back from the head for the transfer another submitted: the state a full node keeps. */
const CONTEST_SEARCH_BLOCKS = 128n;

/**
 * Contested authorizations (a TransferWithAuthorization whose submission, or its estimate, reverted):
 * a transfer of exactly its tokens from the payer to the hot wallet in the last blocks, by a
 * transaction that is not one of ours, is another's submission of it: once it is the network's
 * confirmations deep, the invoice's payment. None: the payer cancelled or moved the tokens, it failed.
 */
async function resolveContested(
  store: Store,
  chain: HotChain,
  options: OutboxOptions & { settlePayment?: SettleChainPayment },
): Promise<number> {
  const settle = options.settlePayment;
  if (settle === undefined) return 0;
  const contested = await authorizationsInState(store, chain.network, "contested", 20);
  if (contested.length === 0) return 0;
  const head = await chain.client.headBlockNumber();
  if (!head.ok) return 0;
  const from = head.value > CONTEST_SEARCH_BLOCKS ? head.value - CONTEST_SEARCH_BLOCKS : 0n;
  let moved = 0;
  for (const a of contested) {
    const ours = await hotTransactionsOf(store, "submission", a.id);
    const logs = await chain.client.transferLogs([a.token as Hex], from, head.value);
    if (!logs.ok) continue;
    const candidates = logs.value.filter(
      (l) =>
        isAddressEqual(l.from, a.from as Hex) &&
        isAddressEqual(l.to, chain.hot.address) &&
        l.value === a.value &&
        !ours.some((t) => t.hash === l.transactionHash),
    );
    const found = await usedThisAuthorization(chain, a, candidates.slice(0, MAX_CANDIDATES));
    if (found === "unknown") continue;
    if (found !== undefined && head.value - found.blockNumber + 1n < BigInt(chain.confirmations)) continue;
    const at = options.now().toISOString();
    await store.transaction(async (tx) => {
      if (found === undefined) return moveAuthorization(tx, a, "failed", at, "no transfer of its tokens was found");
      const place = { txHash: found.transactionHash, logIndex: found.logIndex, blockNumber: found.blockNumber };
      await recordSignedPayment(tx, { settle, a, network: chain.network, blockHash: found.blockHash, at }, place);
      return true;
    });
    moved++;
  }
  return moved;
}

/**
 * Deep and succeeded: the payer's tokens are the hot wallet's, recorded as the invoice's payment
 * like any other (no flush: they never touched a deposit address). Reverted: the authorization
 * failed, the invoice stays payable. Either way the gas is the operator's. A nonce another
 * transaction took: the authorization is submitted again while its window is open.
 */
export function submissionHandler(deps: { settle: SettleChainPayment; nativeCurrency: string | null }): HotTxHandler {
  return {
    settle: async (tx, mined, receipt, at) => {
      await settleSubmission(tx, { settle: deps.settle, hotWallet: mined.fromAddress }, mined, receipt, at);
      const memo = `gas of a payer's signed payment submitted by the hot wallet (${mined.network})`;
      const posting = { cause: "wallet_submission" as const, causeId: mined.id, kind: "gas", memo };
      await postOperatorGas(tx, posting, deps.nativeCurrency, receipt.gasUsed * receipt.effectiveGasPrice, at);
    },
    lost: async (tx, group, at) => {
      const first = group[0];
      if (first === undefined) return;
      const a = await findAuthorization(tx, first.purposeId);
      if (a !== null && a.state === "submitted") await moveAuthorization(tx, a, "accepted", at);
    },
  };
}
