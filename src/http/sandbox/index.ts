// The sandbox API under /sandbox/v1 (product §10): simulates payers and payout processors; only in sandbox mode.

import type { ServiceContext } from "../../app/context.ts";
import type { App } from "../routeHost.ts";
import { registerSandboxPayments } from "./payments.ts";
import { registerSandboxPayoutOutcome } from "./payoutOutcome.ts";
import { registerSandboxSubscriptions } from "./subscriptions.ts";

export const SANDBOX_PREFIX = "/sandbox/v1";

export function registerSandboxRoutes(app: App, ctx: ServiceContext): void {
  // In live mode the routes do not exist at all: the not-found handler answers 404.
  if (ctx.config.serviceMode !== "sandbox") return;
  registerSandboxPayments(app, ctx, SANDBOX_PREFIX);
  registerSandboxPayoutOutcome(app, ctx, SANDBOX_PREFIX);
  registerSandboxSubscriptions(app, ctx, SANDBOX_PREFIX);
}
