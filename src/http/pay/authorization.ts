// POST /pay/{id}/authorization (product §28): a payer's signed payment from the invoice's page, answered 202 once checked and stored; the hot wallet submits it.
import { Type } from "typebox";
import { acceptWalletAuthorization } from "../../app/acceptWalletAuthorization.ts";
import type { ServiceContext } from "../../app/context.ts";
import { Problem, valueOrProblem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { checkOnChainOf } from "../walletChecks.ts";

const Uint = Type.String({ pattern: "^[0-9]{1,78}$", description: "A uint256 in decimal" });

const AuthorizationBody = Type.Object(
  {
    network: Type.String({ minLength: 1, maxLength: 32 }),
    from: Type.String({ pattern: "^0x[0-9a-fA-F]{40}$" }),
    signature: Type.String({ pattern: "^0x[0-9a-fA-F]{130}$", description: "65 bytes: r, s, v" }),
    nonce: Type.String({
      pattern: "^(0x[0-9a-fA-F]{64}|[0-9]{1,78})$",
      description: "EIP-3009: 32 bytes in hex; Permit2: a uint256 in decimal",
    }),
    validAfter: Type.Optional(Uint),
    validBefore: Type.Optional(Uint),
    deadline: Type.Optional(Uint),
    value: Type.Optional(Uint),
  },
  { additionalProperties: false },
);

export function registerPayByWallet(app: App, ctx: ServiceContext): void {
  const checkOnChain = checkOnChainOf(ctx);
  app.post(
    "/pay/:id/authorization",
    {
      schema: {
        hide: true,
        params: Type.Object({ id: Type.String({ minLength: 1, maxLength: 500 }) }),
        body: AuthorizationBody,
      },
    },
    async (request, reply) => {
      const body = request.body;
      const validBefore = body.validBefore ?? body.deadline;
      if (validBefore === undefined) {
        throw new Problem("validation_failed", "validBefore (EIP-3009) or deadline (Permit2) is required.", [
          { pointer: "/validBefore", detail: "is required" },
        ]);
      }
      const posted = {
        network: body.network,
        from: body.from,
        signature: body.signature,
        nonce: body.nonce,
        validAfter: BigInt(body.validAfter ?? "0"),
        validBefore: BigInt(validBefore),
        value: body.value === undefined ? null : BigInt(body.value),
      };
      const accepted = valueOrProblem(
        await acceptWalletAuthorization(ctx, { invoiceId: request.params.id, posted, checkOnChain, now: new Date() }),
      );
      return reply.code(202).header("cache-control", "no-store").send(accepted);
    },
  );
}
