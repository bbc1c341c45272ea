// The dashboard's money routes (product §14): withdrawal methods, withdrawals, refunds, the ledger and the resolution of late payments.

import type { ServiceContext } from "../../app/context.ts";
import type { App } from "../routeHost.ts";
import { registerDashboardLedger } from "./ledger.ts";
import { registerDashboardRefunds } from "./refunds.ts";
import { registerDashboardResolve } from "./resolve.ts";
import type { DashboardScope } from "./session.ts";
import { registerDashboardWithdrawalMethods } from "./withdrawalMethods.ts";
import { registerDashboardWithdrawals } from "./withdrawals.ts";

export function registerDashboardMoney(api: App, ctx: ServiceContext, scope: DashboardScope): void {
  registerDashboardWithdrawalMethods(api, ctx, scope);
  registerDashboardWithdrawals(api, ctx, scope);
  registerDashboardRefunds(api, ctx, scope);
  registerDashboardLedger(api, ctx, scope);
  registerDashboardResolve(api, ctx, scope);
}
