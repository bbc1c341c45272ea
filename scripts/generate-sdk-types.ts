// Writes packages/sdk/src/generated/openapi.ts from the service's OpenAPI document (`npm run generate:sdk`).
import { writeFileSync } from "node:fs";
import { renderSdkTypes, SDK_TYPES_PATH, serviceOpenApiDocument } from "./sdkTypes.ts";

const source = await renderSdkTypes(await serviceOpenApiDocument());
writeFileSync(SDK_TYPES_PATH, source);
process.stdout.write(`wrote ${SDK_TYPES_PATH} (${source.length} characters)\n`);
