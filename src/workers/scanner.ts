// The chain worker of live mode (product §12): per network, the deposit scanner (one process at a time, by lease) and then the sweeps.
import type { FastifyBaseLogger } from "fastify";
import type { ServiceContext } from "../app/context.ts";
import { customerDeposits } from "../app/customerDeposits.ts";
import { chainPaymentSettler } from "../app/recordChainPayment.ts";
import { screenSenderNow } from "../app/screening.ts";
import { flushNetwork } from "../chain/flusher.ts";
import { readPassCatalog } from "../chain/passReads.ts";
import { scanNetwork } from "../chain/scanner.ts";
import { sweepNetwork } from "../chain/sweeper.ts";
import type { Currency } from "../domain/currencies.ts";
import {
  listNetworks,
  type Network,
  newLeaseOwner,
  releaseScanLease,
  ScanLeaseLost,
  takeScanLease,
} from "../store/networks.ts";
import { type Loop, startLoop } from "./loop.ts";
import { NO_TEST_HOOKS, type TestHooks } from "./testHooks.ts";

/** Pause of an idle scanner: a payment shows about this long after its block. */
export const SCAN_IDLE_MS = 2000;
/** A scanner's lease: another process takes the network over this long after this one stopped. */
export const SCAN_LEASE_MS = 30_000;

export function startScannerLoop(
  ctx: ServiceContext,
  log: FastifyBaseLogger,
  autoStart: boolean,
  hooks: TestHooks = NO_TEST_HOOKS,
): Loop {
  const owner = newLeaseOwner();
  const held = new Set<string>();
  // The one clock of the scans, sweeps and flushes this loop runs.
  const now = () => new Date();
  const loop = startLoop({
    name: "scanner",
    idleMs: SCAN_IDLE_MS,
    autoStart,
    log,
    runBatch: async () => {
      // Sandbox money is simulated, and without a wallet no deposit address exists to watch.
      if (ctx.config.serviceMode !== "live" || ctx.wallet === null) return 0;
      let handled = 0;
      const networks = await listNetworks(ctx.store, ctx.box);
      if (networks.length === 0) return 0;
      // One catalog read per pass for every network's scan, sweeps and flushes (product §32); never
      // kept to the next pass, which sees an entry the operator added meanwhile.
      const catalog = await readPassCatalog(ctx.store);
      for (const network of networks) {
        handled += await scanOneNetwork(ctx, log, network, { owner, hooks, held, now, catalog });
      }
      return handled;
    },
  });
  return {
    runOnce: loop.runOnce,
    stop: async () => {
      await loop.stop();
      // Hand the networks over at once instead of after the lease expires.
      for (const name of held) await releaseScanLease(ctx.store, name, owner).catch(() => {});
    },
  };
}

/** What one pass of the loop carries: its lease owner, its test hooks, the networks it holds, its clock and its catalog read. */
interface ScanPass {
  owner: string;
  hooks: TestHooks;
  held: Set<string>;
  now: () => Date;
  catalog: readonly Currency[];
}

/** One network's pass under its lease: scan, then sweep and flush. Answers the work done (0: nothing, or the lease is another's). */
async function scanOneNetwork(
  ctx: ServiceContext,
  log: FastifyBaseLogger,
  network: Network,
  { owner, hooks, held, now, catalog }: ScanPass,
): Promise<number> {
  const at = now().getTime();
  const leased = await takeScanLease(
    ctx.store,
    network.name,
    owner,
    new Date(at).toISOString(),
    new Date(at + SCAN_LEASE_MS).toISOString(),
  );
  if (!leased) {
    held.delete(network.name);
    return 0;
  }
  held.add(network.name);
  const client = ctx.chains.for(network.name, network.rpcUrl);
  let scanned: Awaited<ReturnType<typeof scanNetwork>>;
  let swept = 0;
  try {
    scanned = await scanNetwork(ctx.store, network, client, chainPaymentSettler(ctx.config.publicBaseUrl), leased, {
      hooks: hooks.scan,
      screen: (address) => screenSenderNow(ctx.screening, address),
      now,
      deposits: customerDeposits,
      catalog,
    });
    if (scanned.nodeError !== null) {
      log.warn({ worker: "scanner", network: network.name, error: scanned.nodeError }, "node failed: nothing credited");
      return 0;
    }
    // A pass with payments is news; one that only read blocks (every few seconds, all day) is debug.
    if (scanned.payments > 0) {
      log.info({ worker: "scanner", network: network.name, ...scanned, head: String(scanned.head) }, "scanned");
    } else if (scanned.blocks > 0) {
      log.debug({ worker: "scanner", network: network.name, ...scanned, head: String(scanned.head) }, "scanned");
    }
    // The sweeps run under the same lease: each of their writes checks its token too. They and the
    // flushes take the pass's catalog and the head the scan just read: neither is asked again.
    const ports = { store: ctx.store, wallet: ctx.wallet, now, log };
    const reads = { catalog, head: scanned.head };
    const sweepBatch = { now: now().toISOString(), lease: leased, crashAt: hooks.sweepCrashAt, reads };
    swept = await sweepNetwork(ports, network, client, sweepBatch);
    // Flushes of forwarder deposits too (product §24): no gas to deposit addresses, one transaction per batch.
    const batch = { size: ctx.config.flushBatchSize, maxWaitMs: ctx.config.flushMaxWaitMs };
    const flushStep = { now: now().toISOString(), lease: leased, crashAt: hooks.flushCrashAt, reads };
    swept += await flushNetwork({ ...ports, batch, log }, network, client, flushStep);
  } catch (error) {
    if (!(error instanceof ScanLeaseLost)) throw error;
    // This batch outlived its lease (the process was paused, the node slow): it wrote nothing.
    log.warn({ worker: "scanner", network: network.name }, error.message);
    held.delete(network.name);
    return 0;
  }
  // More blocks behind the head: go on at once.
  return scanned.payments + swept + (scanned.head !== null && scanned.blocks > 0 ? scanned.blocks : 0);
}
