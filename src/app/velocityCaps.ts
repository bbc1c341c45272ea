// The operator's velocity cap per network (product §31): read it with what the last 24 hours spent, and set or remove it.
import { formatUsd } from "../domain/rates.ts";
import { AWAITING_VELOCITY_CAP, parseVelocityCap, VELOCITY_WINDOW_MS } from "../domain/velocityCap.ts";
import { findNetwork } from "../store/networks.ts";
import { nowIso, type Tx } from "../store/store.ts";
import { awaitingCapCount, findVelocityCap, putVelocityCap, spentSince } from "../store/velocityCaps.ts";
import type { ServiceContext } from "./context.ts";
import { type Outcome, refuse, withRefusals } from "./refusal.ts";

export interface VelocityCapView {
  network: string;
  /** USD per rolling 24 hours; null: no cap. */
  usdPer24Hours: string | null;
  /** The network's hot-wallet payouts signed in the last 24 hours, in USD at the rates they were signed at. */
  spentUsdLast24Hours: string;
  /** Queued payouts the cap holds back now. */
  waitingPayouts: number;
}

type CapRefusal = "network_not_found" | "invalid_velocity_cap";

async function viewOf(tx: Tx, network: string): Promise<VelocityCapView> {
  const cap = await findVelocityCap(tx, network);
  const since = new Date(Date.now() - VELOCITY_WINDOW_MS).toISOString();
  return {
    network,
    usdPer24Hours: cap === null ? null : formatUsd(cap),
    spentUsdLast24Hours: formatUsd(await spentSince(tx, network, since)),
    waitingPayouts: await awaitingCapCount(tx, network, AWAITING_VELOCITY_CAP),
  };
}

async function requireNetwork(ctx: ServiceContext, tx: Tx, network: string): Promise<void> {
  if (!(await findNetwork(tx, ctx.box, network))) {
    refuse("network_not_found", `No network ${network} is configured.`, "/", null);
  }
}

export function velocityCapOf(ctx: ServiceContext, network: string): Promise<Outcome<VelocityCapView, CapRefusal>> {
  return withRefusals(() =>
    ctx.store.transaction(async (tx) => {
      await requireNetwork(ctx, tx, network);
      return viewOf(tx, network);
    }),
  );
}

/** Sets the cap (a positive USD amount, at most cents) or removes it (null); it applies from the next payout batch. */
export function setVelocityCap(
  ctx: ServiceContext,
  network: string,
  usdPer24Hours: string | null,
): Promise<Outcome<VelocityCapView, CapRefusal>> {
  return withRefusals(() =>
    ctx.store.transaction(async (tx) => {
      await requireNetwork(ctx, tx, network);
      let cents: bigint | null = null;
      if (usdPer24Hours !== null) {
        const parsed = parseVelocityCap(usdPer24Hours);
        if (!parsed.ok) {
          refuse(
            "invalid_velocity_cap",
            "usdPer24Hours must be a positive USD amount with at most cents.",
            "/usdPer24Hours",
          );
        }
        cents = parsed.value;
      }
      await putVelocityCap(tx, network, cents, nowIso());
      return viewOf(tx, network);
    }),
  );
}
