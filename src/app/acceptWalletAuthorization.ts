// A payer's signed payment posted from the invoice's page (product §28): checked before anything is sent, then stored once for the hot wallet to submit through the outbox.
import { newRowId } from "../domain/ids.ts";
import type { Result } from "../domain/result.ts";
import {
  type AuthorizationRefusal,
  type AuthorizationTerms,
  type CatalogAuthorization,
  checkWindow,
  type SignedAuthorization,
} from "../domain/walletAuthorization.ts";
import { hotTransactionsOf } from "../store/hotTransactions.ts";
import { type PayNetwork, payStatus } from "../store/payStatus.ts";
import type { Store } from "../store/store.ts";
import {
  acceptAuthorization,
  authorizationsOfInvoice,
  findAuthorizationByKey,
  type WalletAuthorization,
} from "../store/walletAuthorizations.ts";
import type { ServiceContext } from "./context.ts";
import { currentRails } from "./rails.ts";
import { type Outcome, refuse, withRefusals } from "./refusal.ts";

/** What the payer posted, its numbers parsed (the route checked their shapes). */
export interface PostedAuthorization extends Omit<SignedAuthorization, "kind"> {
  network: string;
  /** The amount the payer says it signed, in the entry's units; absent: not said. */
  value: bigint | null;
}

/** The chain's side of the checks: signature, nonce, balance, allowance (src/chain/walletAuthorizations.ts). */
export type CheckOnChain = (
  network: string,
  authorization: CatalogAuthorization,
  terms: AuthorizationTerms,
  signed: SignedAuthorization,
) => Promise<Result<true, AuthorizationRefusal | "node_unavailable">>;

export interface AcceptedAuthorization {
  id: string;
  invoiceId: string;
  network: string;
  kind: WalletAuthorization["kind"];
  state: WalletAuthorization["state"];
  txHash: string | null;
}

/** Authorizations read back per invoice: a payer signs a few at most (each one pays the amount due). */
const MAX_PER_INVOICE = 50;

type AcceptRefusal =
  | AuthorizationRefusal
  | "invoice_not_found"
  | "invoice_not_payable"
  | "node_unavailable"
  | "validation_failed";

/** The network the payer signed for, and its terms; refused when it takes no signed payment. */
async function termsOn(ctx: ServiceContext, invoiceId: string, network: string) {
  const status = await payStatus(ctx.store, invoiceId, await currentRails(ctx));
  if (status === null) return refuse("invoice_not_found", "No invoice with this id.", "/");
  if ((status.status !== "pending" && status.status !== "processing") || status.expiresAt === null) {
    return refuse("invoice_not_payable", "This invoice takes no payment now.", "/");
  }
  const n: PayNetwork | undefined = status.networks.find((candidate) => candidate.name === network);
  const hotWallet = ctx.wallet?.hotAddress ?? null;
  if (n === undefined || n.authorization === null || n.chainId === null || n.contractAddress === null || !hotWallet) {
    return refuse("authorization_unsupported", `This invoice takes no signed payment on ${network}.`, "/network");
  }
  const terms: AuthorizationTerms = {
    chainId: n.chainId,
    token: n.contractAddress,
    hotWallet,
    value: n.amountDueMinor,
    validBefore: BigInt(Math.floor(Date.parse(status.expiresAt) / 1000)),
    invoiceId,
  };
  return { authorization: n.authorization, terms, currency: n.internalTicker };
}

async function answerOf(store: Store, a: WalletAuthorization): Promise<AcceptedAuthorization> {
  const sent = await hotTransactionsOf(store, "submission", a.id);
  const last = sent[sent.length - 1];
  return {
    id: a.id,
    invoiceId: a.invoiceId,
    network: a.network,
    kind: a.kind,
    state: a.state,
    txHash: last?.hash ?? null,
  };
}

/**
 * Accepts a payer's signed authorization for the invoice's amount due: the invoice takes payments,
 * the network takes signatures, the value is the amount due, the window is open and ends by the
 * invoice's expiry, and on chain the signature is the payer's, its nonce unused, the tokens there
 * (and approved, for Permit2). Stored once by its replay key: the same one posted again, even in
 * parallel, answers the same row and is submitted once. Nothing is sent here: the hot wallet's
 * worker submits it through the outbox.
 */
export async function acceptWalletAuthorization(
  ctx: ServiceContext,
  input: { invoiceId: string; posted: PostedAuthorization; checkOnChain: CheckOnChain; now: Date },
): Promise<Outcome<AcceptedAuthorization, AcceptRefusal>> {
  return withRefusals(async () => {
    const { posted, invoiceId } = input;
    // Posted again (a retry, a second tab): the same answer, whatever the invoice's state since.
    const again = (await authorizationsOfInvoice(ctx.store, invoiceId, MAX_PER_INVOICE)).find(
      (a) =>
        a.network === posted.network && a.from.toLowerCase() === posted.from.toLowerCase() && a.nonce === posted.nonce,
    );
    if (again !== undefined) return answerOf(ctx.store, again);
    const { authorization, terms, currency } = await termsOn(ctx, invoiceId, posted.network);
    const key = { network: posted.network, token: terms.token, from: posted.from, nonce: posted.nonce };
    const known = await findAuthorizationByKey(ctx.store, key);
    if (known !== null) {
      if (known.invoiceId === invoiceId) return answerOf(ctx.store, known);
      refuse("authorization_nonce_used", "This authorization's nonce was already used.", "/nonce");
    }
    if (posted.value !== null && posted.value !== terms.value) {
      refuse("authorization_value", `The amount due is ${terms.value} units, not ${posted.value}.`, "/value");
    }
    const hexNonce = /^0x[0-9a-fA-F]{64}$/.test(posted.nonce);
    if (hexNonce !== (authorization.kind === "eip3009")) {
      const shape = authorization.kind === "eip3009" ? "32 bytes in hex" : "a uint256 in decimal";
      refuse("validation_failed", `nonce: on ${posted.network} it is ${shape}.`, "/nonce");
    }
    if (authorization.kind === "permit2" && BigInt(posted.nonce) >= 2n ** 256n) {
      refuse("validation_failed", "nonce: a uint256.", "/nonce");
    }
    const signed: SignedAuthorization = { ...posted, kind: authorization.kind };
    const window = checkWindow(signed, terms, BigInt(Math.floor(input.now.getTime() / 1000)));
    if (!window.ok) refuse(window.error, `The authorization's window: ${window.detail}.`, "/validBefore");
    const checked = await input.checkOnChain(posted.network, authorization, terms, signed);
    if (!checked.ok)
      refuse(
        checked.error,
        `${checked.detail ?? checked.error}.`,
        checked.error === "authorization_signature" ? "/signature" : "/",
      );
    const stored = await ctx.store.transaction((tx) =>
      acceptAuthorization(
        tx,
        {
          ...signed,
          id: newRowId(),
          invoiceId,
          network: posted.network,
          currency,
          token: terms.token,
          value: terms.value,
        },
        input.now.toISOString(),
      ),
    );
    // A parallel post of the same signature to another invoice stored it first: it pays that one.
    if (stored.invoiceId !== invoiceId)
      refuse("authorization_nonce_used", "This authorization's nonce was already used.", "/nonce");
    return answerOf(ctx.store, stored);
  });
}
