// The forwarder factory's deployment as a purpose of the outbox (product §24, §26): its settle handler ledgers the gas and records the factory deployed once its transaction is deep.
import { recordFactoryDeployed } from "../store/factoryDeployments.ts";
import { postOperatorGas } from "../store/hotTransactions.ts";
import type { HotTxHandler } from "./outboxFollowing.ts";

/**
 * A deployment's transaction (its purpose id is the factory's address) is deep: its gas is the
 * operator's; succeeded, the factory is recorded deployed (the deterministic deployment proxy
 * reverts when CREATE2 fails, so success means its code is there). A nonce taken by another
 * transaction leaves nothing to settle: the operator deploys again.
 */
export function deploymentHandler(nativeCurrency: string | null): HotTxHandler {
  return {
    settle: async (tx, mined, receipt, at) => {
      const memo = `gas of the forwarder factory's deployment (${mined.network})`;
      const posting = { cause: "factory_deployment" as const, causeId: mined.id, kind: "gas", memo };
      await postOperatorGas(tx, posting, nativeCurrency, receipt.gasUsed * receipt.effectiveGasPrice, at);
      if (receipt.status === "success") await recordFactoryDeployed(tx, mined.network, mined.purposeId, at);
    },
    lost: async () => {},
  };
}
