// CI fails when the dashboard's committed types drift from the service's OpenAPI document (regenerate: npm run generate:dashboard-types).
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { DASHBOARD_TYPES_PATH, renderDashboardTypes, serviceOpenApiDocument } from "../../scripts/sdkTypes.ts";

describe("dashboard types", () => {
  it("are what the service's OpenAPI document generates today", async () => {
    const generated = await renderDashboardTypes(await serviceOpenApiDocument());
    const committed = readFileSync(DASHBOARD_TYPES_PATH, "utf8");
    // A plain equality, so that the diff shows what changed; the message says how to fix it.
    expect(committed, `${DASHBOARD_TYPES_PATH} is stale: run \`npm run generate:dashboard-types\``).toBe(generated);
  }, 60_000);

  it("hold the dashboard's operations and no other surface's", () => {
    const committed = readFileSync(DASHBOARD_TYPES_PATH, "utf8");
    for (const operation of ["DashboardSession", "DashboardListInvoices", "DashboardGetInvoice", "DashboardLedger"]) {
      expect(committed).toContain(`  ${operation}: {`);
    }
    expect(committed).not.toContain('"/public/v1/');
    expect(committed).not.toContain('"/admin/v1/');
  });
});
