// POST /webhooks/stripe (product §20): the card provider's events, verified over their exact bytes and applied once each.
import { applyCardProviderEvent } from "../../app/applyCardProviderEvent.ts";
import type { ServiceContext } from "../../app/context.ts";
import { Problem } from "../problem.ts";
import type { App } from "../routeHost.ts";

export const STRIPE_WEBHOOK_PATH = "/webhooks/stripe";

/** Stripe's events are small; the bound only keeps an unverified body from costing memory. */
const WEBHOOK_BODY_LIMIT_BYTES = 512 * 1024;

/**
 * Registered only when the card provider is configured (live mode). The signature covers the raw
 * body, so this route reads its body as bytes, in a scope of its own: every other route keeps the
 * strict JSON parser. A bad signature is a 400 and changes nothing; an event of a type the service
 * does not act on, or one that names nothing of ours, is answered 200 so the provider stops resending it.
 */
export async function registerStripeWebhook(app: App, ctx: ServiceContext): Promise<void> {
  const provider = ctx.cardProvider;
  if (provider === null) return;
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser(
      "*",
      { parseAs: "buffer", bodyLimit: WEBHOOK_BODY_LIMIT_BYTES },
      (_request, body, done) => done(null, body),
    );
    scope.post(
      STRIPE_WEBHOOK_PATH,
      { schema: { hide: true }, bodyLimit: WEBHOOK_BODY_LIMIT_BYTES },
      async (request) => {
        const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        const header = request.headers["stripe-signature"];
        const parsed = provider.parseWebhook(raw, typeof header === "string" ? header : undefined);
        if (!parsed.ok) {
          request.log.warn({ reason: parsed.detail }, "card provider webhook refused: signature not verified");
          throw new Problem(
            "invalid_webhook_signature",
            "The webhook's signature does not verify; nothing was changed.",
          );
        }
        const applied = await applyCardProviderEvent(ctx, provider, parsed.value, request.log);
        if (!applied.ok) {
          // The event's own change is stored; only its fee waits, and the provider's redelivery books it.
          throw new Problem(
            "card_provider_unavailable",
            "The card provider's fee of this payment is not known yet; deliver the event again.",
          );
        }
        return { received: true, outcome: applied.value };
      },
    );
  });
}
