// The operator guide's configuration table, between its markers, as src/configVariables.ts defines it.
import { configVariablesTable } from "../src/configVariables.ts";

export const OPERATOR_GUIDE_PATH = "docs/operator-guide.md";
const START = "<!-- config-variables:start (npm run generate:config-docs) -->";
const END = "<!-- config-variables:end -->";

/** The guide with its table replaced by the generated one; throws when the markers are missing. */
export function withConfigTable(guide: string): string {
  const start = guide.indexOf(START);
  const end = guide.indexOf(END);
  if (start === -1 || end === -1 || end < start) throw new Error(`${OPERATOR_GUIDE_PATH} lacks the table's markers`);
  return `${guide.slice(0, start + START.length)}\n${configVariablesTable()}\n${guide.slice(end)}`;
}
