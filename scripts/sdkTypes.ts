// The SDK's types from the service's own OpenAPI document: the app is built in-process and its document rendered.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import openapiTS from "openapi-typescript";
import { prepare } from "../src/bootstrap.ts";
import { loadConfig } from "../src/config.ts";
import { buildApp } from "../src/http/app.ts";

export const SDK_TYPES_PATH = "packages/sdk/src/generated/openapi.ts";

const HEADER = `// Generated from the service's OpenAPI document by \`npm run generate:sdk\` (scripts/generate-sdk-types.ts).
// Do not edit: test/project/sdkTypes.test.ts fails when this file and the document differ.
/* eslint-disable */
`;

/** The OpenAPI document the service serves at /openapi.json, from a throwaway SQLite store. */
export async function serviceOpenApiDocument(): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), "payments-openapi-"));
  try {
    const config = loadConfig({
      DATABASE_URL: `sqlite:${join(dir, "payments.db")}`,
      ADMIN_TOKEN: "openapi-generation-token",
      SECRET_ENCRYPTION_KEY: "a".repeat(64),
      // A fixed base URL: the document's `servers` must not depend on the machine.
      PUBLIC_BASE_URL: "http://localhost:3000",
      SERVICE_MODE: "sandbox",
      LOG_LEVEL: "silent",
    });
    const { ctx } = await prepare(config);
    try {
      const app = await buildApp(ctx, { logger: false });
      try {
        await app.ready();
        return JSON.parse(JSON.stringify(app.swagger())) as Record<string, unknown>;
      } finally {
        await app.close();
      }
    } finally {
      await ctx.store.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function render(document: Record<string, unknown>): Promise<string> {
  return openapiTS(document as unknown as Parameters<typeof openapiTS>[0], { exportType: false, alphabetize: true });
}

/** The TypeScript source of `packages/sdk/src/generated/openapi.ts` for a document. */
export async function renderSdkTypes(document: Record<string, unknown>): Promise<string> {
  return HEADER + (await render(document));
}

export const DASHBOARD_TYPES_PATH = "web/dashboard/src/generated/api.ts";

const DASHBOARD_HEADER = `// Generated from the service's OpenAPI document by \`npm run generate:dashboard-types\` (scripts/generate-dashboard-types.ts).
// Do not edit: test/project/dashboardTypes.test.ts fails when this file and the document differ.
/* eslint-disable */
`;

/**
 * The TypeScript source of `web/dashboard/src/generated/api.ts`: the same document as the SDK's,
 * its paths narrowed to the dashboard's own surface (/dashboard/v1) so the file holds what the
 * dashboard calls.
 */
export async function renderDashboardTypes(document: Record<string, unknown>): Promise<string> {
  const paths = Object.fromEntries(
    Object.entries(document.paths as Record<string, unknown>).filter(([path]) => path.startsWith("/dashboard/v1/")),
  );
  return DASHBOARD_HEADER + (await render({ ...document, paths }));
}
