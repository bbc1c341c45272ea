// CI fails when docs/api-reference.md drifts from the service's OpenAPI document (regenerate: npm run generate:api-reference).
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { API_REFERENCE_PATH, renderApiReference } from "../../scripts/apiReference.ts";
import { serviceOpenApiDocument } from "../../scripts/sdkTypes.ts";

describe("API reference", () => {
  it("is what the service's OpenAPI document renders today", async () => {
    const document = await serviceOpenApiDocument();
    const generated = renderApiReference(document);
    const committed = readFileSync(API_REFERENCE_PATH, "utf8");
    expect(committed, "docs/api-reference.md is stale: run `npm run generate:api-reference`").toBe(generated);

    // Every route of the document has its heading, so a renderer bug cannot silently drop one.
    for (const [path, item] of Object.entries<Record<string, unknown>>(document.paths as Record<string, never>)) {
      for (const method of Object.keys(item)) {
        expect(committed).toContain(`### \`${method.toUpperCase()} ${path}\``);
      }
    }
  }, 60_000);

  it("renders fields, enums, nullability, parameters and problem statuses from a schema", () => {
    const markdown = renderApiReference({
      info: { title: "T", version: "1" },
      components: {
        securitySchemes: { apiKey: { type: "apiKey", in: "header", name: "x-api-key" } },
        schemas: { Problem: { type: "object", properties: { code: { type: "string" } } } },
      },
      paths: {
        "/things/{id}": {
          post: {
            operationId: "MakeThing",
            tags: ["things"],
            security: [{ apiKey: [] }],
            parameters: [{ in: "path", name: "id", required: true, schema: { type: "string", maxLength: 5 } }],
            requestBody: {
              required: true,
              content: {
                "application/json": {
                  schema: {
                    type: "object",
                    required: ["kind"],
                    additionalProperties: false,
                    properties: {
                      kind: {
                        anyOf: [
                          { type: "string", enum: ["a"] },
                          { type: "string", enum: ["b"] },
                        ],
                      },
                      note: { type: ["string", "null"], description: "A note" },
                    },
                  },
                },
              },
            },
            responses: {
              "200": {
                description: "Default Response",
                content: {
                  "application/json": {
                    schema: {
                      type: "object",
                      properties: {
                        items: { type: "array", items: { type: "object", properties: { n: { type: "integer" } } } },
                      },
                    },
                  },
                },
              },
              "404": { content: { "application/json": { schema: { $ref: "#/components/schemas/Problem" } } } },
            },
          },
        },
      },
    });
    expect(markdown).toContain("### `POST /things/{id}`");
    expect(markdown).toContain("**MakeThing**");
    expect(markdown).toContain("Credentials: `x-api-key` header.");
    expect(markdown).toContain("| `id` | path | string | yes | length 0–5 |");
    expect(markdown).toContain("| `kind` | string | yes | no | one of `a`, `b` |");
    expect(markdown).toContain("| `note` | string | no | yes | A note |");
    expect(markdown).toContain("No other fields are allowed (400 `validation_failed`).");
    expect(markdown).toContain("| `items[].n` | integer | no | no |  |");
    expect(markdown).toContain("[404](#404)");
    expect(markdown).toContain("`invoice_not_found`");
  });
});
