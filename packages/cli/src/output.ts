// What the CLI prints: human tables by default, JSON with --json; secrets hidden unless --show-secrets.

/** Fields whose values are secrets: printed only with --show-secrets. */
const SECRET_FIELDS = new Set(["secretKey", "callbackSecret", "adminToken", "secret"]);
const MAX_CELL = 60;

export function hideSecrets(value: unknown, show: boolean): unknown {
  if (show) return value;
  if (Array.isArray(value)) return value.map((item) => hideSecrets(item, show));
  if (typeof value !== "object" || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) {
    out[key] =
      SECRET_FIELDS.has(key) && typeof field === "string" && field !== ""
        ? "(hidden: add --show-secrets to print it)"
        : hideSecrets(field, show);
  }
  return out;
}

function cell(value: unknown, maxLength = MAX_CELL): string {
  let text: string;
  if (value === null || value === undefined) text = "-";
  else if (typeof value === "object") text = JSON.stringify(value);
  else text = String(value);
  text = text.replace(/[\r\n\t]+/g, " ");
  return text.length > maxLength ? `${text.slice(0, maxLength - 1)}…` : text;
}

function grid(rows: string[][]): string {
  const widths: number[] = [];
  for (const row of rows) {
    for (const [i, c] of row.entries()) widths[i] = Math.max(widths[i] ?? 0, c.length);
  }
  return rows
    .map((row) =>
      row
        .map((c, i) => c.padEnd(widths[i] ?? 0))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

/** A table: an array of objects as rows and columns, an object as field/value lines, anything else as text. */
export function table(value: unknown, columns?: readonly string[]): string {
  if (Array.isArray(value)) {
    if (value.length === 0) return "(none)";
    if (value.every((row) => typeof row === "object" && row !== null && !Array.isArray(row))) {
      const keys = columns ?? Object.keys(value[0] as object);
      const header = keys.map((k) => k.toUpperCase());
      return grid([header, ...value.map((row) => keys.map((k) => cell((row as Record<string, unknown>)[k])))]);
    }
    return value.map(cell).join("\n");
  }
  if (typeof value === "object" && value !== null) {
    // One record: values whole (an invoice_url is there to be copied); only columns of lists are cut.
    return grid(Object.entries(value).map(([k, v]) => [k, cell(v, Number.POSITIVE_INFINITY)]));
  }
  return cell(value);
}

export function render(value: unknown, options: { json: boolean; showSecrets: boolean; columns?: readonly string[] }) {
  const visible = hideSecrets(value, options.showSecrets);
  return options.json ? JSON.stringify(visible, null, 2) : table(visible, options.columns);
}
