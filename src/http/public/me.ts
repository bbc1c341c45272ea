// Me: the merchant that owns the API key.

import type { ServiceContext } from "../../app/context.ts";
import { findMerchant } from "../../store/merchants.ts";
import { merchantAuth, ownerOf } from "../auth.ts";
import { Problem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { PublicMerchantInfo, problems } from "../schemas.ts";

export function registerMe(app: App, ctx: ServiceContext): void {
  app.get(
    "/public/v1/me",
    {
      onRequest: [merchantAuth(ctx)],
      schema: {
        operationId: "Me",
        tags: ["merchant"],
        summary: "The merchant of the API key",
        security: [{ apiKey: [] }],
        response: { 200: PublicMerchantInfo, ...problems(401, 429) },
      },
    },
    async (request) => {
      const merchant = await findMerchant(ctx.store, ownerOf(request).merchantId);
      if (!merchant) throw new Problem("invalid_api_key", "The API key is unknown or revoked.");
      return {
        id: merchant.id,
        email: merchant.email,
        merchantName: merchant.merchantName,
        directorName: merchant.directorName,
        website: merchant.website,
        logo: merchant.logo,
        whitelabeling: merchant.whitelabeling,
      };
    },
  );
}
