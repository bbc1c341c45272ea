// The public merchant API under /public/v1 (docs/merchant-api.md).

import type { ServiceContext } from "../../app/context.ts";
import type { App } from "../routeHost.ts";
import { registerCountries } from "./countries.ts";
import { registerCreateRefund } from "./createRefund.ts";
import { registerCreateWithdrawal } from "./createWithdrawal.ts";
import { registerCurrencies } from "./currencies.ts";
import { registerDepositAddresses } from "./depositAddresses.ts";
import { registerInvoiceDisputes } from "./disputes.ts";
import { registerExtensions } from "./extensions.ts";
import { registerInvoices } from "./invoices.ts";
import { registerMe } from "./me.ts";
import { registerPaymentLinks } from "./paymentLinks.ts";
import { registerPlans } from "./plans.ts";
import { registerRefundCrypto } from "./refundCrypto.ts";
import { registerRefundFiat } from "./refundFiat.ts";
import { registerSubscriptions } from "./subscriptions.ts";
import { registerVersion } from "./version.ts";
import { registerX402 } from "./x402.ts";

export const PUBLIC_PREFIX = "/public/v1";

export function registerPublicRoutes(app: App, ctx: ServiceContext): void {
  registerVersion(app);
  registerCurrencies(app, ctx);
  registerCountries(app);
  registerMe(app, ctx);
  registerInvoices(app, ctx);
  registerCreateWithdrawal(app, ctx);
  registerRefundCrypto(app, ctx);
  registerRefundFiat(app, ctx);
  registerCreateRefund(app, ctx);
  registerExtensions(app, ctx);
  registerPaymentLinks(app, ctx);
  registerPlans(app, ctx);
  registerSubscriptions(app, ctx);
  registerDepositAddresses(app, ctx);
  registerInvoiceDisputes(app, ctx);
  // The x402 facilitator: the merchant's API key, its own prefix (the protocol's paths).
  registerX402(app, ctx);
}
