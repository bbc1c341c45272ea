// The payer's "Pay by card" (product §20): POST /pay/{id}/card sends the payer to the invoice's one checkout at the card provider.
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { startCardCheckout } from "../../app/startCardCheckout.ts";
import { Problem } from "../problem.ts";
import type { App } from "../routeHost.ts";

/**
 * The payer's page lets its forms lead to the provider's checkout (a form's redirect is held to
 * `form-action` too); only where a card provider is configured.
 */
export function payPageFormAction(ctx: ServiceContext): string | null {
  return ctx.cardProvider === null ? null : `form-action 'self' ${ctx.cardProvider.checkoutOrigin}`;
}

/** Whether the payer's page offers "Pay by card": live mode with a card provider (the sandbox simulates cards itself). */
export function cardCheckoutOffered(ctx: ServiceContext): boolean {
  return ctx.config.serviceMode === "live" && ctx.cardProvider !== null;
}

/** A form's body carries nothing this route reads; the bound keeps an unread body small. */
const FORM_BODY_LIMIT_BYTES = 1024;

export function registerPayByCard(app: App, ctx: ServiceContext): void {
  if (!cardCheckoutOffered(ctx)) return;
  // A browser's form posts form data, not JSON: this route, in a scope of its own, takes any body and ignores it.
  app.register(async (plugin) => {
    const scope = plugin as unknown as App;
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", { bodyLimit: FORM_BODY_LIMIT_BYTES }, (_request, _payload, done) =>
      done(null, undefined),
    );
    scope.post(
      "/pay/:id/card",
      {
        bodyLimit: FORM_BODY_LIMIT_BYTES,
        schema: { hide: true, params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 500 }) }) },
      },
      async (request, reply) => {
        const started = await startCardCheckout(ctx, request.params.id);
        if (!started.ok) {
          if (started.error === "card_provider_unavailable" || started.error === "card_provider_refused") {
            request.log.warn({ invoiceId: request.params.id, error: started.error }, "card checkout not created");
          }
          throw new Problem(started.error, started.detail ?? "No card checkout for this invoice.");
        }
        // 303: the browser follows with a GET, to the provider's page; it comes back to /pay/{id}.
        return reply.header("cache-control", "no-store").redirect(started.value.url, 303);
      },
    );
  });
}
