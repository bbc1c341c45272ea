// The dashboard's JSON API under /dashboard/v1 (product §14): the session scope and its audit record, then one registration per resource, in the order of the OpenAPI document.
import type { FastifyRequest } from "fastify";
import type { ServiceContext } from "../../app/context.ts";
import { audit } from "../../store/dashboard.ts";
import { nowIso, type Tx } from "../../store/store.ts";
import type { App } from "../routeHost.ts";
import { registerDashboardPassword, registerDashboardTotp } from "./account.ts";
import { registerDashboardApiKeys } from "./apiKeys.ts";
import { registerDashboardApprovals } from "./approvals.ts";
import { registerDashboardAudit } from "./audit.ts";
import { registerDashboardCallbacks } from "./callbacks.ts";
import { addressOf } from "./common.ts";
import { registerDashboardDepositAddresses } from "./depositAddresses.ts";
import { registerDashboardInvitationAccept } from "./invitations.ts";
import { registerDashboardInvoices } from "./invoices.ts";
import { registerDashboardMoney } from "./money.ts";
import { registerDashboardOverview } from "./overview.ts";
import { registerOverviewChart } from "./overviewChart.ts";
import { registerDashboardPaymentLinks } from "./paymentLinks.ts";
import { requireSession, signedIn } from "./session.ts";
import { registerDashboardSession, registerDashboardSignIn } from "./signIn.ts";
import { registerDashboardStepUp } from "./stepUp.ts";
import { registerDashboardSubscriptions } from "./subscriptions.ts";
import { registerDashboardTeam, registerDashboardTeamMember } from "./team.ts";

export const DASHBOARD_PREFIX = "/dashboard/v1";

export function registerDashboardApi(app: App, ctx: ServiceContext): void {
  app.register(
    async (scope) => {
      const api = scope as unknown as App;
      const session = requireSession(ctx);
      const record = (request: FastifyRequest, tx: Tx, action: string, target: string | null) => {
        const { user } = signedIn(request);
        return audit(
          tx,
          {
            merchantId: user.merchantId,
            userId: user.id,
            userEmail: user.email,
            action,
            target,
            address: addressOf(request),
          },
          nowIso(),
        );
      };

      // The order of the OpenAPI document (and of docs/api-reference.md): keep it.
      registerDashboardSignIn(api, ctx);
      registerDashboardSession(api, ctx, { session, record });
      registerDashboardInvitationAccept(api, ctx);
      registerDashboardStepUp(api, ctx, { session, record });
      registerDashboardMoney(api, ctx, { session, record });
      registerOverviewChart(api, ctx, { session });
      registerDashboardOverview(api, ctx, { session });
      registerDashboardApiKeys(api, ctx, { session, record });
      registerDashboardTeam(api, ctx, { session, record });
      registerDashboardTeamMember(api, ctx, { session, record });
      registerDashboardAudit(api, ctx, { session });
      registerDashboardPassword(api, ctx, { session, record });
      registerDashboardTotp(api, ctx, { session, record });
      registerDashboardInvoices(api, ctx, { session, record });
      registerDashboardPaymentLinks(api, ctx, { session, record });
      registerDashboardSubscriptions(api, ctx, { session, record });
      registerDashboardDepositAddresses(api, ctx, { session, record });
      registerDashboardCallbacks(api, ctx, { session, record });
      registerDashboardApprovals(api, ctx, { session, record });
    },
    { prefix: DASHBOARD_PREFIX },
  );
}
