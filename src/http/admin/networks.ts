// Operator API: EVM networks (product §12, §24): their node, confirmations and explorer, how each scanner and hot wallet is doing, and the forwarder factory's deployment.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { deployFactory } from "../../app/deployFactory.ts";
import { forgetRails } from "../../app/rails.ts";
import { readGasRunway } from "../../chain/gasRunway.ts";
import type { Hex } from "../../domain/chain.ts";
import { factoryAddress } from "../../domain/forwarders.ts";
import { FLUSH_GAS_ASSUMED, type GasRunway, PAYOUT_GAS_ASSUMED } from "../../domain/gasRunway.ts";
import { formatAmount } from "../../domain/money.ts";
import {
  checkExplorerUrl,
  checkNetworkName,
  checkRpcUrl,
  DEFAULT_CONFIRMATIONS,
  MAX_CONFIRMATIONS,
  maskRpcUrl,
} from "../../domain/networks.ts";
import { factoryMissingDetail } from "../../domain/paymentRails.ts";
import { listCurrencies } from "../../store/currencies.ts";
import { type FactoryDeployment, pendingDeployments, recordedFactories } from "../../store/factoryDeployments.ts";
import { flushOverview } from "../../store/flushes.ts";
import { listNetworks, type Network, putNetwork } from "../../store/networks.ts";
import {
  DEFAULT_PAYOUT_SETTINGS,
  findPayoutSettings,
  type NetworkPayoutSettings,
  networkPayoutOverview,
  savePayoutSettings,
} from "../../store/payoutTransactions.ts";
import { nowIso } from "../../store/store.ts";
import { Problem, valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { Nullable, problems } from "../schemas.ts";

/** Every route here: the operator's bearer token. */
const security = [{ adminToken: [] }];

/** Bound of each node call a GET /admin/v1/networks makes: a dead node does not hold the answer long. */
const STATUS_TIMEOUT_MS = 3000;

const NetworkParams = Type.Object({ network: Type.String({ minLength: 1, maxLength: 32 }) });

const NetworkBody = Type.Object(
  {
    chainId: Type.Integer({ minimum: 1, maximum: 2 ** 53 - 1 }),
    rpcUrl: Type.String({ minLength: 1, maxLength: 2000 }),
    confirmations: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_CONFIRMATIONS })),
    explorerUrl: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 500 }))),
    maxFeePerGasGwei: Type.Optional(
      Type.String({
        pattern: "^(0|[1-9][0-9]{0,5})(\\.[0-9]{1,9})?$",
        description: `Cap on a payout transaction's maxFeePerGas, in gwei (default ${DEFAULT_PAYOUT_SETTINGS.maxFeePerGasGwei})`,
      }),
    ),
    replaceAfterSeconds: Type.Optional(
      Type.Integer({
        minimum: 10,
        maximum: 86_400,
        description: `How long a payout transaction may stay unmined before it is replaced with higher fees (default ${DEFAULT_PAYOUT_SETTINGS.replaceAfterSeconds})`,
      }),
    ),
  },
  { additionalProperties: false },
);

const NetworkConfiguration = Type.Object(
  {
    network: Type.String(),
    chainId: Type.Integer(),
    rpcUrl: Type.String({ description: "Masked: scheme and host only (the URL may hold a provider key)" }),
    confirmations: Type.Integer(),
    explorerUrl: Nullable(Type.String()),
    maxFeePerGasGwei: Type.String(),
    replaceAfterSeconds: Type.Integer(),
    createdAt: Type.String(),
    updatedAt: Type.String(),
  },
  { additionalProperties: false },
);

const HotBalance = Type.Object(
  { currency: Type.String(), balance: Nullable(Type.String()) },
  { additionalProperties: false },
);

const GasView = Type.Object(
  {
    nativeBalance: Type.String({ description: "The hot wallet's native coin, in whole coins (18 decimals)" }),
    nativeBalanceWei: Type.String({ description: "The same in wei" }),
    promisedWei: Type.String({
      description:
        "Gas promised to hot-wallet transactions in flight (payouts, flushes, gas fundings, fills, deployments): per nonce, the dearest one's value and gas limit × max fee",
    }),
    freeWei: Type.String({ description: "nativeBalanceWei less promisedWei (never below 0)" }),
    maxFeePerGasWei: Type.String({
      description: "The max fee per gas a transaction would be signed with now: the node's, within maxFeePerGasGwei",
    }),
    flushesCovered: Type.String({
      description: `Flushes the free coin pays for at that fee, assuming ${FLUSH_GAS_ASSUMED} gas each (a flush of one deposit whose forwarder is deployed on the way, with the flusher's 20% headroom)`,
    }),
    payoutsCovered: Type.String({
      description: `Token payouts the free coin pays for at that fee, assuming ${PAYOUT_GAS_ASSUMED} gas each (the bound held back for a queued token payout)`,
    }),
  },
  {
    additionalProperties: false,
    description:
      "The hot wallet's gas on this network, whether or not its native coin is in the catalog; null without a wallet or when the node did not answer",
  },
);

function gasView(runway: GasRunway) {
  return {
    nativeBalance: formatAmount(runway.balanceWei, 18),
    nativeBalanceWei: runway.balanceWei.toString(),
    promisedWei: runway.promisedWei.toString(),
    freeWei: runway.freeWei.toString(),
    maxFeePerGasWei: runway.maxFeePerGasWei.toString(),
    flushesCovered: runway.flushesCovered.toString(),
    payoutsCovered: runway.payoutsCovered.toString(),
  };
}

const NetworkStatus = Type.Object(
  {
    ...NetworkConfiguration.properties,
    headBlock: Nullable(Type.String({ description: "The node's head now; null when it did not answer" })),
    lastScannedBlock: Nullable(Type.String()),
    lag: Nullable(Type.String({ description: "headBlock - lastScannedBlock" })),
    hotWalletAddress: Nullable(Type.String()),
    hotWalletBalances: Type.Array(HotBalance),
    gas: Nullable(GasView),
    nodeError: Nullable(
      Type.String({
        description: "What is wrong with the node now (or as the scanner last saw it); null when healthy",
      }),
    ),
    scannerError: Nullable(Type.String()),
    scannerErrorAt: Nullable(Type.String()),
    factoryAddress: Nullable(
      Type.String({
        description:
          "The forwarder factory of the current hot wallet (product §24): the same on every network; null without a wallet",
      }),
    ),
    factoryDeployed: Type.Boolean({
      description: "Whether that factory is recorded deployed here (its code checked): live crypto opens with it",
    }),
    factoryDeployment: Nullable(
      Type.Object(
        {
          transactionHash: Type.String(),
          nonce: Type.Integer(),
          since: Type.String({ description: "When it was signed" }),
        },
        { additionalProperties: false, description: "The deployment in flight (signed, not yet mined), if any" },
      ),
    ),
    liveCrypto: Nullable(
      Type.String({ description: "Why live crypto on this network is closed (what to do); null when it is open" }),
    ),
    payouts: Type.Object(
      {
        awaitingFunds: Type.Integer({ description: "Payouts waiting for the hot wallet to be funded" }),
        oldestAwaitingSince: Nullable(Type.String({ description: "When the oldest of them was accepted" })),
        inFlight: Type.Integer({ description: "Payouts with a transaction signed and not yet final" }),
        hotWalletNextNonce: Nullable(Type.Integer()),
        unminedNonces: Type.Integer({
          description:
            "Hot-wallet nonces with a stored transaction not yet mined (payouts, gas fundings, flushes, nonce fills)",
        }),
        oldestUnminedSince: Nullable(Type.String({ description: "When the oldest of them was signed" })),
        nonceGaps: Type.Integer({
          description:
            "Nonces below the next one that no stored transaction uses (filled by a zero-value transfer to the hot wallet)",
        }),
        nonceGapSince: Nullable(Type.String({ description: "Since when a gap has been seen" })),
      },
      { additionalProperties: false },
    ),
    flushes: Type.Object(
      {
        waitingDeposits: Type.Integer({
          description:
            "Confirmed deposits at forwarder addresses not yet in the hot wallet: waiting for a flush, or in one not yet mined",
        }),
        oldestWaitingSince: Nullable(Type.String({ description: "When the oldest of them was confirmed and queued" })),
        failedDeposits: Type.Integer({
          description:
            "Deposits whose flush the token refused past the retry bound (FlushFailed): the operator's to look at",
        }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

function configuration(n: Network, settings: NetworkPayoutSettings) {
  return {
    network: n.name,
    chainId: n.chainId,
    rpcUrl: maskRpcUrl(n.rpcUrl),
    confirmations: n.confirmations,
    explorerUrl: n.explorerUrl,
    maxFeePerGasGwei: settings.maxFeePerGasGwei,
    replaceAfterSeconds: settings.replaceAfterSeconds,
    createdAt: n.createdAt,
    updatedAt: n.updatedAt,
  };
}

/** What the node says now, each call bounded; failures are shown, never thrown. */
async function status(
  ctx: ServiceContext,
  n: Network,
  tokens: { ticker: string; decimals: number; contract: Hex | null }[],
  factory: ReturnType<typeof factoryView>,
) {
  const client = ctx.chains.for(n.name, n.rpcUrl);
  const [settings, payouts, flushes] = await Promise.all([
    findPayoutSettings(ctx.store, n.name),
    networkPayoutOverview(ctx.store, n.name),
    flushOverview(ctx.store, n.name),
  ]);
  const bounded = <T>(work: Promise<T>, fallback: T): Promise<T> =>
    Promise.race([work, new Promise<T>((resolve) => setTimeout(() => resolve(fallback), STATUS_TIMEOUT_MS).unref())]);
  const timeout = { ok: false as const, error: "node_timeout" as const, detail: "the node did not answer in time" };
  const [chainId, head] = await Promise.all([
    bounded(client.chainId(), timeout),
    bounded(client.headBlockNumber(), timeout),
  ]);
  let nodeError: string | null = null;
  if (!chainId.ok) nodeError = `${chainId.error}: ${chainId.detail ?? ""}`.trim();
  else if (chainId.value !== n.chainId)
    nodeError = `wrong_chain_id: the node is on chain ${chainId.value}, not ${n.chainId}`;
  const hot = ctx.wallet?.hotAddress ?? null;
  const reading = Promise.all(
    tokens.map(async (t) => {
      if (hot === null || nodeError !== null) return { currency: t.ticker, balance: null };
      const answer = await bounded(
        t.contract === null ? client.balance(hot) : client.tokenBalance(t.contract, hot),
        timeout,
      );
      return { currency: t.ticker, balance: answer.ok ? formatAmount(answer.value, t.decimals) : null };
    }),
  );
  // The gas read alongside the balances: both bounded, neither waits for the other.
  const [balances, runway] = await Promise.all([
    reading,
    hot === null || nodeError !== null ? null : readGasRunway(ctx.store, n.name, client, hot, STATUS_TIMEOUT_MS),
  ]);
  const headBlock = head.ok && nodeError === null ? head.value : null;
  return {
    ...configuration(n, settings),
    headBlock: headBlock === null ? null : headBlock.toString(),
    lastScannedBlock: n.scannedBlock === null ? null : n.scannedBlock.toString(),
    lag: headBlock === null || n.scannedBlock === null ? null : (headBlock - n.scannedBlock).toString(),
    hotWalletAddress: hot,
    hotWalletBalances: balances,
    gas: runway === null ? null : gasView(runway),
    nodeError: nodeError ?? (head.ok ? null : `${head.error}: ${head.detail ?? ""}`.trim()),
    scannerError: n.nodeError,
    scannerErrorAt: n.nodeErrorAt,
    ...factory,
    payouts,
    flushes,
  };
}

/** The forwarder factory's side of a network (product §24): where it is, whether deployed, and what the gate says. */
function factoryView(
  ctx: ServiceContext,
  name: string,
  recorded: string | null,
  pending: FactoryDeployment | undefined,
) {
  const hot = ctx.wallet?.hotAddress ?? null;
  const address = hot === null ? null : factoryAddress(hot);
  const deployed = address !== null && recorded === address.toLowerCase();
  let liveCrypto: string | null = null;
  if (ctx.config.serviceMode !== "live") liveCrypto = "the service is in sandbox mode";
  else if (hot === null) liveCrypto = "WALLET_MNEMONIC is not set";
  else if (!deployed) liveCrypto = factoryMissingDetail({ network: name });
  return {
    factoryAddress: address,
    factoryDeployed: deployed,
    factoryDeployment: pending
      ? { transactionHash: pending.hash, nonce: pending.nonce, since: pending.createdAt }
      : null,
    liveCrypto,
  };
}

/**
 * The node's head block, the scanner's start (product §19): read before anything is written, so a
 * node that cannot give it changes nothing (503 node_unavailable).
 */
async function headOf(ctx: ServiceContext, name: string, rpcUrl: string) {
  const client = ctx.chains.for(name, rpcUrl);
  const number = await client.headBlockNumber();
  const block = number.ok ? await client.block(number.value) : number;
  if (!block.ok || block.value === null) {
    const why = block.ok ? "the head block was not found" : block.error;
    throw new Problem("node_unavailable", `The node did not give its head block (${why}); nothing was changed.`);
  }
  const { number: n, hash, parentHash, timestamp } = block.value;
  return { number: n, hash, parentHash, timestamp };
}

export function registerAdminNetworks(app: App, ctx: ServiceContext): void {
  registerAdminPutNetwork(app, ctx);
  registerAdminListNetworks(app, ctx);
  registerAdminDeployFactory(app, ctx);
}

const FactoryDeploymentAnswer = Type.Object(
  {
    network: Type.String(),
    factoryAddress: Type.String({ description: "The hot wallet's forwarder factory: the same on every network" }),
    state: Type.Union([Type.Literal("deployed"), Type.Literal("pending")]),
    transactionHash: Nullable(
      Type.String({ description: "The deployment this service sent; null when the factory was found deployed" }),
    ),
  },
  { additionalProperties: false },
);

function registerAdminDeployFactory(app: App, ctx: ServiceContext): void {
  app.post(
    "/networks/:network/factory",
    {
      schema: {
        operationId: "AdminDeployFactory",
        tags: ["operator"],
        summary:
          "Deploy the hot wallet's forwarder factory on a network (idempotent): 200 deployed (recorded, live crypto opens), 202 pending (call again to follow it)",
        security,
        params: NetworkParams,
        response: { 200: FactoryDeploymentAnswer, 202: FactoryDeploymentAnswer, ...problems(401, 404, 409, 503) },
      },
    },
    async (request, reply) => {
      const answer = valueOrProblem(await deployFactory(ctx, request.params.network));
      return reply.code(answer.state === "deployed" ? 200 : 202).send(answer);
    },
  );
}

// longer than 70 lines: one route, most of it the schema of the network settings the interface documents.
function registerAdminPutNetwork(app: App, ctx: ServiceContext): void {
  app.put(
    "/networks/:network",
    {
      schema: {
        operationId: "AdminPutNetwork",
        tags: ["operator"],
        summary: "Configure an EVM network: its node (checked to answer with chainId), confirmations and explorer",
        security,
        params: NetworkParams,
        body: NetworkBody,
        response: { 200: NetworkConfiguration, ...problems(400, 401, 409, 415, 503) },
      },
    },
    async (request) => {
      const name = checkNetworkName(request.params.network);
      if (!name.ok) throw new Problem(name.error, `${name.detail}.`);
      const { chainId, rpcUrl, confirmations, explorerUrl, maxFeePerGasGwei, replaceAfterSeconds } = request.body;
      const settings: NetworkPayoutSettings = {
        maxFeePerGasGwei: maxFeePerGasGwei ?? DEFAULT_PAYOUT_SETTINGS.maxFeePerGasGwei,
        replaceAfterSeconds: replaceAfterSeconds ?? DEFAULT_PAYOUT_SETTINGS.replaceAfterSeconds,
      };
      if (/^0(\.0*)?$/.test(settings.maxFeePerGasGwei)) {
        throw new Problem("invalid_fee_cap", "maxFeePerGasGwei must be positive.", [
          { pointer: "/maxFeePerGasGwei", detail: "must be positive" },
        ]);
      }
      const url = checkRpcUrl(rpcUrl);
      if (!url.ok) throw new Problem(url.error, `${url.detail}.`, [{ pointer: "/rpcUrl", detail: url.detail ?? "" }]);
      if (explorerUrl !== undefined && explorerUrl !== null) {
        const explorer = checkExplorerUrl(explorerUrl);
        if (!explorer.ok) {
          throw new Problem(explorer.error, `${explorer.detail}.`, [
            { pointer: "/explorerUrl", detail: explorer.detail ?? "" },
          ]);
        }
      }
      // A network is only configured with a node that answers, on the chain the operator named:
      // the gate opens with it, and a wrong chain would show payers addresses on another chain.
      const probe = await ctx.chains.for(name.value, rpcUrl).chainId();
      if (!probe.ok) {
        throw new Problem("network_unreachable", `The node did not answer eth_chainId (${probe.error}).`);
      }
      if (probe.value !== chainId) {
        throw new Problem(
          "chain_id_mismatch",
          `The node is on chain ${probe.value}, not ${chainId}: check rpcUrl and chainId.`,
        );
      }
      const head = await headOf(ctx, name.value, rpcUrl);
      const put = await ctx.store.transaction(async (tx) => {
        const now = nowIso();
        const written = await putNetwork(
          tx,
          ctx.box,
          name.value,
          {
            chainId,
            rpcUrl,
            confirmations: confirmations ?? DEFAULT_CONFIRMATIONS,
            explorerUrl: explorerUrl ?? null,
            head,
          },
          now,
        );
        if (written.ok) await savePayoutSettings(tx, name.value, settings, now);
        return written;
      });
      if (!put.ok) throw new Problem(put.error, `${put.detail}.`);
      const { network } = put.value;
      forgetRails(ctx);
      return configuration(network, settings);
    },
  );
}

function registerAdminListNetworks(app: App, ctx: ServiceContext): void {
  app.get(
    "/networks",
    {
      schema: {
        operationId: "AdminListNetworks",
        tags: ["operator"],
        summary: "Each network with its node's head, the scanner's progress and lag, the hot wallet and its balances",
        security,
        response: { 200: Type.Array(NetworkStatus), ...problems(401) },
      },
    },
    async () => {
      const [networks, currencies, recorded, pending] = await Promise.all([
        listNetworks(ctx.store, ctx.box),
        listCurrencies(ctx.store),
        recordedFactories(ctx.store),
        pendingDeployments(ctx.store),
      ]);
      return Promise.all(
        networks.map((n) =>
          status(
            ctx,
            n,
            currencies
              .filter((c) => c.network === n.name)
              .map((c) => ({ ticker: c.ticker, decimals: c.decimals, contract: c.contractAddress as Hex | null })),
            factoryView(ctx, n.name, recorded.get(n.name) ?? null, pending.get(n.name)),
          ),
        ),
      );
    },
  );
}
