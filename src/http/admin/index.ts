// The operator API under /admin/v1 (product §9): every route behind the bearer ADMIN_TOKEN.

import type { ServiceContext } from "../../app/context.ts";
import { addressLimited } from "../addressLimits.ts";
import { adminAuth } from "../auth.ts";
import type { App } from "../routeHost.ts";
import { registerAdminApiKeys } from "./apiKeys.ts";
import { registerAdminBalances } from "./balances.ts";
import { registerAdminCardFees } from "./cardFees.ts";
import { registerAdminCurrencies, registerAdminPutCurrency } from "./currencies.ts";
import { registerAdminDashboardUsers } from "./dashboardUsers.ts";
import { registerAdminDeposits } from "./deposits.ts";
import { registerAdminDisputes } from "./disputes.ts";
import { registerAdminFlushDeposits } from "./flushDeposits.ts";
import { registerAdminInvoiceCallbacks } from "./invoiceCallbacks.ts";
import { registerAdminInvoices } from "./invoices.ts";
import { registerAdminMerchants } from "./merchants.ts";
import { registerAdminNetworks } from "./networks.ts";
import { registerAdminPayoutPolicies } from "./payoutPolicies.ts";
import { registerAdminPayouts } from "./payouts.ts";
import { registerAdminRedeliverCallback } from "./redeliverCallback.ts";
import { registerAdminResolve } from "./resolve.ts";
import { registerAdminScreening } from "./screening.ts";
import { registerAdminSigninFailures } from "./signinFailures.ts";
import { registerAdminStrayPayments } from "./strayPayments.ts";
import { registerAdminVelocityCaps } from "./velocityCaps.ts";
import { registerAdminWithdrawalMethods } from "./withdrawalMethods.ts";

export function registerAdminRoutes(app: App, ctx: ServiceContext): void {
  app.register(
    async (admin) => {
      // Requests per client address, before the token check (in this process); failed tokens are
      // limited apart, in the store (adminAuth).
      const limit = app.adminAddressLimit;
      if (limit !== null) {
        admin.addHook("onRequest", async (request, reply) => {
          if (await limit(request, reply)) throw addressLimited("operator API requests");
        });
      }
      admin.addHook("onRequest", adminAuth(ctx));
      const scoped = admin as unknown as App;
      registerAdminMerchants(scoped, ctx);
      registerAdminApiKeys(scoped, ctx);
      registerAdminWithdrawalMethods(scoped, ctx);
      registerAdminBalances(scoped, ctx);
      registerAdminCurrencies(scoped, ctx);
      registerAdminPutCurrency(scoped, ctx);
      registerAdminPayouts(scoped, ctx);
      registerAdminPayoutPolicies(scoped, ctx);
      registerAdminInvoiceCallbacks(scoped, ctx);
      registerAdminRedeliverCallback(scoped, ctx);
      registerAdminDashboardUsers(scoped, ctx);
      registerAdminNetworks(scoped, ctx);
      registerAdminInvoices(scoped, ctx);
      registerAdminResolve(scoped, ctx);
      registerAdminScreening(scoped, ctx);
      registerAdminSigninFailures(scoped, ctx);
      registerAdminStrayPayments(scoped, ctx);
      registerAdminDisputes(scoped, ctx);
      registerAdminCardFees(scoped, ctx);
      registerAdminFlushDeposits(scoped, ctx);
      registerAdminDeposits(scoped, ctx);
      registerAdminVelocityCaps(scoped, ctx);
    },
    { prefix: "/admin/v1" },
  );
}
