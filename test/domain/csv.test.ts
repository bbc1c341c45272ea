// CSV export cells: RFC 4180 quoting and the formula-injection guard, by example and by property.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { csvCell, csvRow } from "../../src/domain/csv.ts";

/** A minimal RFC 4180 reader of one row, to check that every cell reads back. */
function parseRow(line: string): string[] {
  const cells: string[] = [];
  let i = 0;
  for (;;) {
    if (line[i] === '"') {
      let value = "";
      i += 1;
      for (;;) {
        if (line[i] === '"' && line[i + 1] === '"') {
          value += '"';
          i += 2;
        } else if (line[i] === '"') {
          i += 1;
          break;
        } else {
          value += line[i];
          i += 1;
        }
      }
      cells.push(value);
    } else {
      const end = line.slice(i).search(/,|\r\n$/);
      cells.push(line.slice(i, i + end));
      i += end;
    }
    if (line.slice(i) === "\r\n") return cells;
    expect(line[i]).toBe(",");
    i += 1;
  }
}

describe("csvCell", () => {
  it("quotes commas, quotes and line breaks, and leaves plain text alone", () => {
    expect(csvCell("plain")).toBe("plain");
    expect(csvCell("100.5")).toBe("100.5");
    expect(csvCell(null)).toBe("");
    expect(csvCell("a,b")).toBe('"a,b"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell("two\nlines")).toBe('"two\nlines"');
  });

  it("neutralises cells a spreadsheet would read as formulas", () => {
    expect(csvCell("=1+1")).toBe('"\'=1+1"');
    expect(csvCell("+1")).toBe('"\'+1"');
    expect(csvCell("-1")).toBe('"\'-1"');
    expect(csvCell("@SUM(A1)")).toBe('"\'@SUM(A1)"');
    expect(csvCell("\tx")).toBe('"\'\tx"');
    expect(csvCell('=HYPERLINK("http://x","y")')).toBe('"\'=HYPERLINK(""http://x"",""y"")"');
    expect(csvCell("a=b")).toBe("a=b");
  });

  it("reads back: every row parses to its cells, no cell starts a formula", () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: "binary" }), { minLength: 1, maxLength: 6 }), (values) => {
        const cells = parseRow(csvRow(values));
        expect(cells).toEqual(values.map((v) => (/^[=+\-@\t\r]/.test(v) ? `'${v}` : v)));
        for (const c of cells) expect(c).not.toMatch(/^[=+\-@\t\r]/);
      }),
    );
  });
});
