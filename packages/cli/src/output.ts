// What the CLI prints: human tables by default, JSON with --json; secrets hidden unless --show-secrets.

/** Fields whose values are secrets: printed only with --show-secrets. */
const SECRET_FIELDS = new Set(["secretKey", "callbackSecret", "adminToken", "secret"]);
const MAX_CELL = 60;
/** How notes name secret fields. */
const SECRET_LABELS: Record<string, string> = { secretKey: "secret key", callbackSecret: "callback secret" };
const label = (name: string) => SECRET_LABELS[name] ?? name;

/** What stands in a table for a hidden secret; JSON leaves the field out instead, so no script takes a placeholder for a value. */
export const HIDDEN_SECRET = "(hidden: add --show-secrets to print it)";

/**
 * Hides secret fields at any depth, except those named in `shown`: in a table they read
 * HIDDEN_SECRET, in JSON (`json`) they are left out. `hidden` collects the names of those hidden.
 */
export function hideSecrets(
  value: unknown,
  show: boolean,
  options: { json?: boolean; shown?: readonly string[]; hidden?: Set<string> } = {},
): unknown {
  if (show) return value;
  if (Array.isArray(value)) return value.map((item) => hideSecrets(item, show, options));
  if (typeof value !== "object" || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value)) {
    const secret = SECRET_FIELDS.has(key) && typeof field === "string" && field !== "";
    if (!secret || options.shown?.includes(key)) {
      out[key] = secret ? field : hideSecrets(field, show, options);
      continue;
    }
    options.hidden?.add(key);
    if (!options.json) out[key] = HIDDEN_SECRET;
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

export interface Rendered {
  /** For stdout. */
  text: string;
  /** For stderr: what was hidden or shown for the only time, or nothing. */
  notes: string[];
}

/**
 * A command's answer as printed. Secrets named in `showsOnce` (the service shows them only in this
 * answer) are printed plainly with a warning; other secrets are hidden unless `showSecrets`.
 */
export function render(
  value: unknown,
  options: { json: boolean; showSecrets: boolean; columns?: readonly string[]; showsOnce?: readonly string[] },
): Rendered {
  const hidden = new Set<string>();
  const visible = hideSecrets(value, options.showSecrets, {
    json: options.json,
    shown: options.showsOnce ?? [],
    hidden,
  });
  const notes: string[] = [];
  const once = (options.showsOnce ?? []).filter((name) => hasSecret(value, name));
  if (once.length > 0) {
    notes.push(
      `The ${once.map(label).join(", ")} above is shown only this once: store it now (for example in a secret manager). ` +
        "It will not be shown again; if it is lost, create a new API key and revoke this one.",
    );
  }
  if (hidden.size > 0) notes.push(`Hidden: the ${[...hidden].map(label).join(", ")} (add --show-secrets to print it).`);
  return { text: options.json ? JSON.stringify(visible, null, 2) : table(visible, options.columns), notes };
}

function hasSecret(value: unknown, name: string): boolean {
  if (typeof value !== "object" || value === null) return false;
  const field = (value as Record<string, unknown>)[name];
  return typeof field === "string" && field !== "";
}
