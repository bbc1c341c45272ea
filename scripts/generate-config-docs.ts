// Writes the configuration table of docs/operator-guide.md from src/configVariables.ts (`npm run generate:config-docs`).
import { readFileSync, writeFileSync } from "node:fs";
import { OPERATOR_GUIDE_PATH, withConfigTable } from "./configDocs.ts";

writeFileSync(OPERATOR_GUIDE_PATH, withConfigTable(readFileSync(OPERATOR_GUIDE_PATH, "utf8")));
process.stdout.write(`wrote the configuration table of ${OPERATOR_GUIDE_PATH}\n`);
