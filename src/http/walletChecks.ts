// The chain's side of a payer's signed authorization (product §28), as the use cases' CheckOnChain port: shared by the payer's page and the x402 facilitator.
import type { CheckOnChain } from "../app/acceptWalletAuthorization.ts";
import type { ServiceContext } from "../app/context.ts";
import { err } from "../domain/result.ts";
import { findNetwork } from "../store/networks.ts";

/** The chain's checks, their module (viem) loaded at the first signed payment only. */
export function checkOnChainOf(ctx: ServiceContext): CheckOnChain {
  return async (name, authorization, terms, signed) => {
    const network = await findNetwork(ctx.store, ctx.box, name);
    if (network === null) return err("authorization_unsupported", `${name} is not configured`);
    const { checkSignedAuthorization } = await import("../chain/walletAuthorizations.ts");
    return checkSignedAuthorization(ctx.chains.for(network.name, network.rpcUrl), authorization, terms, signed);
  };
}
