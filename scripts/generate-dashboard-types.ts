// Writes web/dashboard/src/generated/api.ts from the service's OpenAPI document (`npm run generate:dashboard-types`).
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { DASHBOARD_TYPES_PATH, renderDashboardTypes, serviceOpenApiDocument } from "./sdkTypes.ts";

const source = await renderDashboardTypes(await serviceOpenApiDocument());
mkdirSync(dirname(DASHBOARD_TYPES_PATH), { recursive: true });
writeFileSync(DASHBOARD_TYPES_PATH, source);
process.stdout.write(`wrote ${DASHBOARD_TYPES_PATH} (${source.length} characters)\n`);
