// The OpenAPI document the service serves is lint-clean under Redocly's recommended rules, and holds what client generators need.
import { beforeAll, describe, expect, it } from "vitest";
import { lintServedDocument } from "../../scripts/lintOpenApi.ts";
import { useTestServer } from "../support/fixture.ts";

interface Operation {
  operationId?: string;
  summary?: string;
  security?: unknown[];
  responses: Record<string, { content?: Record<string, unknown> }>;
}

let paths: Record<string, Record<string, Operation>>;
const server = useTestServer();
beforeAll(async () => {
  paths = ((await (await fetch(`${server.baseUrl}/openapi.json`)).json()) as { paths: typeof paths }).paths;
});

const operations = () =>
  Object.entries(paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({ route: `${method.toUpperCase()} ${path}`, operation })),
  );

describe("the served OpenAPI document", () => {
  it("has no error or warning under `redocly lint` (recommended rules, redocly.yaml)", async () => {
    expect(await lintServedDocument(server.baseUrl)).toEqual([]);
  }, 300_000);

  it("gives every operation a summary and an operationId", () => {
    const missing = operations()
      .filter(({ operation }) => !operation.summary || !operation.operationId)
      .map(({ route }) => route);
    expect(missing).toEqual([]);
  });

  it("says explicitly that public and sign-in operations need no credentials", () => {
    for (const route of [
      "GET /public/v1/version",
      "GET /public/v1/currencies",
      "GET /public/v1/countries",
      "GET /healthz",
      "GET /readyz",
      "POST /dashboard/v1/session",
      "POST /dashboard/v1/invitations/accept",
    ]) {
      const operation = operations().find((o) => o.route === route)?.operation;
      expect(operation?.security, route).toEqual([]);
    }
    const unsecured = operations().filter(({ operation }) => operation.security === undefined);
    expect(unsecured.map(({ route }) => route)).toEqual([]);
  });

  it("documents the CSV export's text/csv answer and the metrics' text answer", () => {
    const csv = paths["/dashboard/v1/invoices/export.csv"]?.get;
    expect(Object.keys(csv?.responses["200"]?.content ?? {})).toEqual(["text/csv"]);
    const metrics = paths["/metrics"]?.get;
    expect(Object.keys(metrics?.responses["200"]?.content ?? {})).toEqual(["text/plain"]);
    expect(metrics?.responses["401"]).toBeDefined();
  });
});
