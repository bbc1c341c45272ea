// The x402 facilitator (product §28): what it supports, a payment's verification (the pay-with-wallet checks in the protocol's words) and its settlement as an invoice of the merchant, submitted once by the hot wallet through the outbox.
import { type Static, Type } from "typebox";
import { Value } from "typebox/value";
import type { Currency } from "../domain/currencies.ts";
import { formatAmount } from "../domain/money.ts";
import {
  type AuthorizationTerms,
  type CatalogAuthorization,
  checkWindow,
  type SignedAuthorization,
} from "../domain/walletAuthorization.ts";
import {
  CLOCK_SKEW_SECONDS,
  caip2Of,
  chainIdOfCaip2,
  MAX_TIMEOUT_SECONDS,
  reasonOfRefusal,
  X402_REASONS,
  X402_SCHEME,
  X402_VERSION,
  type X402Reason,
} from "../domain/x402.ts";
import { listCurrencies } from "../store/currencies.ts";
import { listNetworks, type Network } from "../store/networks.ts";
import { findAuthorizationByKey, type WalletAuthorization } from "../store/walletAuthorizations.ts";
import type { CheckOnChain } from "./acceptWalletAuthorization.ts";
import type { ServiceContext } from "./context.ts";
import type { Outcome } from "./refusal.ts";

const Uint = Type.String({ pattern: "^[0-9]{1,78}$" });
const Address = Type.String({ pattern: "^0x[0-9a-fA-F]{40}$" });

/** x402 v2 PaymentRequirements (@x402/core/types), as the resource server sends them. */
export const X402Requirements = Type.Object({
  scheme: Type.String({ maxLength: 64 }),
  network: Type.String({ maxLength: 64 }),
  asset: Type.String({ maxLength: 64 }),
  amount: Uint,
  payTo: Type.String({ maxLength: 64 }),
  maxTimeoutSeconds: Type.Integer({ minimum: 1 }),
  extra: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
});

/** The exact EVM scheme's EIP-3009 payload: the TransferWithAuthorization the payer signed. */
const ExactEvmPayload = Type.Object({
  authorization: Type.Object({
    from: Address,
    to: Address,
    value: Uint,
    validAfter: Uint,
    validBefore: Uint,
    nonce: Type.String({ pattern: "^0x[0-9a-fA-F]{64}$" }),
  }),
  signature: Type.String({ pattern: "^0x[0-9a-fA-F]{130}$" }),
});

const ResourceInfo = Type.Object({
  url: Type.String({ maxLength: 2000 }),
  description: Type.Optional(Type.String({ maxLength: 2000 })),
});

/** The body of POST /x402/v1/verify and /settle (x402 v2 VerifyRequest, SettleRequest). */
export const X402PaymentRequest = Type.Object({
  x402Version: Type.Integer(),
  paymentPayload: Type.Object({
    x402Version: Type.Integer(),
    resource: Type.Optional(ResourceInfo),
    accepted: X402Requirements,
    payload: ExactEvmPayload,
  }),
  paymentRequirements: X402Requirements,
});
export type X402PaymentRequest = Static<typeof X402PaymentRequest>;

/** x402 v2 VerifyResponse. */
export interface X402VerifyResponse {
  isValid: boolean;
  invalidReason?: X402Reason;
  invalidMessage?: string;
  payer?: string;
}

/** x402 v2 SupportedResponse. */
export interface X402SupportedResponse {
  kinds: { x402Version: number; scheme: string; network: string; extra?: Record<string, unknown> }[];
  extensions: string[];
  signers: Record<string, string[]>;
}

/** A payment that passed the checks that need neither the chain nor the store: what it pays, to whom, on what. */
export interface X402Payment {
  network: Network;
  caip2: string;
  entry: Currency;
  authorization: CatalogAuthorization;
  signed: SignedAuthorization;
  terms: AuthorizationTerms;
  /** The authorization's replay key (network, token, from, nonce), as stored. */
  key: { network: string; token: string; from: string; nonce: string };
  resource: { url: string; description?: string } | null;
}

export type Invalid = { reason: X402Reason; message: string; payer: string | null };
export type Checked = { ok: true; payment: X402Payment } | { ok: false; invalid: Invalid };

function invalid(reason: X402Reason, message: string, payer: string | null = null): Checked {
  return { ok: false, invalid: { reason, message, payer } };
}

/** Every configured network the hot wallet signs on with an EIP-3009 entry, as x402's `kinds`. */
export async function x402Supported(ctx: ServiceContext): Promise<X402SupportedResponse> {
  const hot = ctx.wallet?.hotAddress ?? null;
  if (hot === null) return { kinds: [], extensions: [], signers: {} };
  const [networks, currencies] = await Promise.all([listNetworks(ctx.store, ctx.box), listCurrencies(ctx.store)]);
  const served = networks.filter((n) =>
    currencies.some((c) => c.network === n.name && c.contractAddress !== null && c.authorization?.kind === "eip3009"),
  );
  const kinds = served.map((n) => ({ x402Version: X402_VERSION, scheme: X402_SCHEME, network: caip2Of(n.chainId) }));
  return { kinds, extensions: [], signers: { "eip155:*": [hot] } };
}

/** The configured network and EIP-3009 entry the requirements name; a reason when there is none. */
async function entryOf(
  ctx: ServiceContext,
  r: Static<typeof X402Requirements>,
): Promise<{ network: Network; entry: Currency; authorization: CatalogAuthorization & { kind: "eip3009" } } | Invalid> {
  const chainId = chainIdOfCaip2(r.network);
  const networks = chainId === null ? [] : await listNetworks(ctx.store, ctx.box);
  const network = networks.find((n) => n.chainId === chainId);
  if (network === undefined)
    return { reason: X402_REASONS.invalidNetwork, message: `${r.network} is not served`, payer: null };
  const entry = (await listCurrencies(ctx.store)).find(
    (c) => c.network === network.name && c.contractAddress?.toLowerCase() === r.asset.toLowerCase(),
  );
  const authorization = entry?.authorization;
  if (entry === undefined || authorization?.kind !== "eip3009") {
    return { reason: X402_REASONS.notEip3009, message: `${r.asset} is not an EIP-3009 token served here`, payer: null };
  }
  return { network, entry, authorization };
}

/** The requirements' EIP-712 domain (`extra.name`, `extra.version`) is the catalog's: the payer signed for it. */
function domainReason(r: Static<typeof X402Requirements>, a: { name: string; version: string }): Invalid | null {
  const name = r.extra?.name;
  const version = r.extra?.version;
  if (typeof name !== "string" || typeof version !== "string") {
    return { reason: X402_REASONS.missingDomain, message: "extra.name and extra.version are required", payer: null };
  }
  if (name !== a.name)
    return { reason: X402_REASONS.nameMismatch, message: `the token's name is ${a.name}`, payer: null };
  if (version !== a.version)
    return { reason: X402_REASONS.versionMismatch, message: `the token's version is ${a.version}`, payer: null };
  return null;
}

/**
 * The checks that need neither the chain nor the store, in the protocol's words: the shape, the
 * version and scheme, a served network and EIP-3009 asset with its domain, `payTo` and the
 * authorization's `to` the hot wallet, the value the requirements' amount, a window we can honour.
 */
export async function checkRequest(ctx: ServiceContext, body: unknown, now: Date): Promise<Checked> {
  if (!Value.Check(X402PaymentRequest, body))
    return invalid(X402_REASONS.invalidPayload, "not an x402 v2 exact EVM payment");
  const { paymentPayload: p, paymentRequirements: r } = body;
  const payer = p.payload.authorization.from;
  if (body.x402Version !== X402_VERSION || p.x402Version !== X402_VERSION)
    return invalid(X402_REASONS.invalidVersion, `x402 version ${X402_VERSION} only`, payer);
  if (p.accepted.scheme !== X402_SCHEME || r.scheme !== X402_SCHEME)
    return invalid(X402_REASONS.unsupportedScheme, "scheme exact only", payer);
  if (p.accepted.network !== r.network)
    return invalid(X402_REASONS.networkMismatch, "the payload's network is not the requirements'", payer);
  const found = await entryOf(ctx, r);
  if ("reason" in found) return invalid(found.reason, found.message, payer);
  const wrongDomain = domainReason(r, found.authorization);
  if (wrongDomain !== null) return invalid(wrongDomain.reason, wrongDomain.message, payer);
  const hot = ctx.wallet?.hotAddress ?? null;
  const a = p.payload.authorization;
  const same = (x: string, y: string | null) => y !== null && x.toLowerCase() === y.toLowerCase();
  if (!same(r.payTo, hot) || !same(a.to, hot))
    return invalid(
      X402_REASONS.recipientMismatch,
      "payTo and the authorization's to must be this service's hot wallet",
      payer,
    );
  if (BigInt(a.value) !== BigInt(r.amount) || BigInt(r.amount) === 0n)
    return invalid(X402_REASONS.value, `the authorization's value is not the amount ${r.amount}`, payer);
  if (r.maxTimeoutSeconds > MAX_TIMEOUT_SECONDS)
    return invalid(X402_REASONS.validBefore, `maxTimeoutSeconds is at most ${MAX_TIMEOUT_SECONDS}`, payer);
  const nowSeconds = BigInt(Math.floor(now.getTime() / 1000));
  const token = found.entry.contractAddress as string;
  const from = a.from.toLowerCase();
  const nonce = a.nonce.toLowerCase();
  return {
    ok: true,
    payment: {
      network: found.network,
      caip2: r.network,
      entry: found.entry,
      authorization: found.authorization,
      signed: {
        kind: "eip3009_transfer",
        from,
        signature: p.payload.signature,
        nonce,
        validAfter: BigInt(a.validAfter),
        validBefore: BigInt(a.validBefore),
      },
      terms: {
        chainId: found.network.chainId,
        token,
        hotWallet: hot as string,
        value: BigInt(r.amount),
        // x402's client signs validBefore = its now + maxTimeoutSeconds.
        validBefore: nowSeconds + BigInt(r.maxTimeoutSeconds + CLOCK_SKEW_SECONDS),
        invoiceId: "",
      },
      key: { network: found.network.name, token, from, nonce },
      resource: p.resource ?? null,
    },
  };
}

/** The window and the chain's checks (signature, nonce, balance): null when they pass; a refusal's reason else. */
export async function checkSigned(
  payment: X402Payment,
  checkOnChain: CheckOnChain,
  now: Date,
): Promise<Outcome<Invalid | null, "node_unavailable">> {
  const nowSeconds = BigInt(Math.floor(now.getTime() / 1000));
  const payer = payment.signed.from;
  const window = checkWindow(payment.signed, payment.terms, nowSeconds);
  if (!window.ok) {
    const reason = reasonOfRefusal(window.error, payment.signed.validAfter >= nowSeconds);
    return { ok: true, value: { reason, message: `the authorization's window: ${window.detail}`, payer } };
  }
  const checked = await checkOnChain(payment.network.name, payment.authorization, payment.terms, payment.signed);
  if (checked.ok) return { ok: true, value: null };
  if (checked.error === "node_unavailable") {
    const detail = `${checked.detail ?? "the node did not answer"}.`;
    return { ok: false, refusal: { code: "node_unavailable", detail, pointer: "/", retryAfterSeconds: 5 } };
  }
  const message = checked.detail ?? checked.error;
  return { ok: true, value: { reason: reasonOfRefusal(checked.error, false), message, payer } };
}

/** Whether a stored authorization is exactly this payment (a repeat), not another use of its nonce. */
export function isSamePayment(stored: WalletAuthorization, payment: X402Payment): boolean {
  const s = payment.signed;
  return (
    stored.kind === "eip3009_transfer" &&
    stored.signature.toLowerCase() === s.signature.toLowerCase() &&
    stored.value === payment.terms.value &&
    stored.validAfter === s.validAfter &&
    stored.validBefore === s.validBefore
  );
}

/**
 * POST /x402/v1/verify: valid when the payment passes every check and its authorization was never
 * used here or on chain. A payment already settled (or settling) is a replay: nonce already used.
 */
export async function verifyX402Payment(
  ctx: ServiceContext,
  input: { body: unknown; checkOnChain: CheckOnChain; now: Date },
): Promise<Outcome<X402VerifyResponse, "node_unavailable">> {
  const checked = await checkRequest(ctx, input.body, input.now);
  if (!checked.ok) return { ok: true, value: verifyAnswer(checked.invalid) };
  const { payment } = checked;
  if ((await findAuthorizationByKey(ctx.store, payment.key)) !== null) {
    const used = {
      reason: X402_REASONS.nonceUsed,
      message: "this authorization was already settled here",
      payer: payment.signed.from,
    };
    return { ok: true, value: verifyAnswer(used) };
  }
  const signed = await checkSigned(payment, input.checkOnChain, input.now);
  if (!signed.ok) return signed;
  if (signed.value !== null) return { ok: true, value: verifyAnswer(signed.value) };
  return { ok: true, value: { isValid: true, payer: payment.signed.from } };
}

function verifyAnswer(i: Invalid): X402VerifyResponse {
  return {
    isValid: false,
    invalidReason: i.reason,
    invalidMessage: i.message,
    ...(i.payer === null ? {} : { payer: i.payer }),
  };
}

/** The invoice's amount: the authorization's value in the entry's units, as CreateInvoice takes it. */
export function invoiceAmountOf(payment: X402Payment): string {
  return formatAmount(payment.terms.value, payment.entry.decimals);
}
