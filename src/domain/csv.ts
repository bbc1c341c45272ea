// CSV (RFC 4180) for exports a merchant opens in a spreadsheet: quoting, CRLF rows, and the formula-injection guard.

/** Characters a spreadsheet reads as the start of a formula (OWASP's list: = + - @, tab and carriage return). */
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * One cell. A value starting like a formula is prefixed with an apostrophe, so a spreadsheet shows
 * it as text instead of evaluating it (an order number `=HYPERLINK(…)` stays inert); a cell with a
 * comma, quote, line break or the guard is quoted, its quotes doubled. Null is the empty cell.
 */
export function csvCell(value: string | null): string {
  if (value === null) return "";
  const guarded = FORMULA_START.test(value) ? `'${value}` : value;
  return guarded !== value || /[",\r\n]/.test(guarded) ? `"${guarded.replace(/"/g, '""')}"` : guarded;
}

/** One row, CRLF-terminated as RFC 4180 says. */
export function csvRow(values: readonly (string | null)[]): string {
  return `${values.map(csvCell).join(",")}\r\n`;
}
