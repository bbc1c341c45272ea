// The x402 facilitator API under /x402/v1 (product §28, x402 v2, scheme exact, EIP-3009): GET /supported, POST /verify, POST /settle, authenticated by the merchant's API key (x-api-key, which @x402/core's HTTP facilitator client sends from its auth-header hook).
import { Type } from "typebox";
import type { ServiceContext } from "../../app/context.ts";
import { settleX402Payment } from "../../app/settleX402Payment.ts";
import { verifyX402Payment, x402Supported } from "../../app/x402Facilitator.ts";
import { SETTLE_WAIT_MS } from "../../domain/x402.ts";
import { merchantAuth, ownerOf } from "../auth.ts";
import { valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { checkOnChainOf } from "../walletChecks.ts";

export const X402_PREFIX = "/x402/v1";

/** How often a pending settle looks at its submission. */
const SETTLE_POLL_MS = 250;

/** The body is checked by the use case, which answers a malformed payment in the protocol's words (`invalid_payload`). */
const PaymentRequestBody = Type.Object({}, { additionalProperties: true });

export function registerX402(app: App, ctx: ServiceContext): void {
  const auth = merchantAuth(ctx);
  const checkOnChain = checkOnChainOf(ctx);
  app.get(`${X402_PREFIX}/supported`, { onRequest: [auth], schema: { hide: true } }, async (_request, reply) =>
    reply.header("cache-control", "no-store").send(await x402Supported(ctx)),
  );
  app.post(
    `${X402_PREFIX}/verify`,
    { onRequest: [auth], schema: { hide: true, body: PaymentRequestBody } },
    async (request, reply) => {
      const answer = await verifyX402Payment(ctx, { body: request.body, checkOnChain, now: new Date() });
      return reply.header("cache-control", "no-store").send(valueOrProblem(answer));
    },
  );
  app.post(
    `${X402_PREFIX}/settle`,
    { onRequest: [auth], schema: { hide: true, body: PaymentRequestBody } },
    async (request, reply) => {
      const ports = { checkOnChain, now: () => new Date(), waitMs: SETTLE_WAIT_MS, pollMs: SETTLE_POLL_MS };
      const merchantId = ownerOf(request).merchantId;
      const answer = await settleX402Payment(ctx, { merchantId, body: request.body, ports });
      return reply.header("cache-control", "no-store").send(valueOrProblem(answer));
    },
  );
}
