// CI fails when the SDK's committed types drift from the service's OpenAPI document (regenerate: npm run generate:sdk).
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { renderSdkTypes, SDK_TYPES_PATH, serviceOpenApiDocument } from "../../scripts/sdkTypes.ts";

describe("SDK types", () => {
  it("are what the service's OpenAPI document generates today", async () => {
    const generated = await renderSdkTypes(await serviceOpenApiDocument());
    const committed = readFileSync(SDK_TYPES_PATH, "utf8");
    // A plain equality, so that the diff shows what changed; the message says how to fix it.
    expect(committed, "packages/sdk/src/generated/openapi.ts is stale: run `npm run generate:sdk`").toBe(generated);
  }, 60_000);

  it("name every merchant operation the SDK calls", () => {
    const committed = readFileSync(SDK_TYPES_PATH, "utf8");
    for (const operation of [
      "Me",
      "CreateInvoice",
      "EstimateFees",
      "GetInvoice",
      "GetInvoicesByOrderId",
      "CreateWithdrawal",
      "RefundCrypto",
      "RefundFiat",
      "Currencies",
      "Countries",
    ]) {
      expect(committed).toContain(`  ${operation}: {`);
    }
  });
});
