// Writes docs/api-reference.md from the service's OpenAPI document (`npm run generate:api-reference`).
import { writeFileSync } from "node:fs";
import { API_REFERENCE_PATH, renderApiReference } from "./apiReference.ts";
import { serviceOpenApiDocument } from "./sdkTypes.ts";

const markdown = renderApiReference(await serviceOpenApiDocument());
writeFileSync(API_REFERENCE_PATH, markdown);
process.stdout.write(`wrote ${API_REFERENCE_PATH} (${markdown.length} characters)\n`);
