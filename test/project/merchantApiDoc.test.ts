// docs/merchant-api.md against the service: its field tables name exactly the fields the schemas have, and its signing example signs as it says.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { serviceOpenApiDocument } from "../../scripts/sdkTypes.ts";

const DOC = readFileSync("docs/merchant-api.md", "utf8");

/** The first column of the first table under a heading, without its backticks. */
function tableFields(heading: string): string[] {
  const start = DOC.indexOf(`\n${heading}\n`);
  if (start === -1) throw new Error(`no heading ${heading}`);
  const rest = DOC.slice(start + heading.length + 2);
  const table = /((?:^\|.*\n)+)/m.exec(rest);
  if (table === null) throw new Error(`no table under ${heading}`);
  return table[1]!
    .trim()
    .split("\n")
    .slice(2)
    .map((row) => row.split("|")[1]!.trim().replace(/`/g, ""));
}

type Schema = Record<string, any>;

describe("docs/merchant-api.md", () => {
  let document: Schema;
  const operation = (method: string, path: string): Schema => document.paths[path][method];
  const ok = (method: string, path: string): Schema =>
    operation(method, path).responses["200"].content["application/json"].schema;
  const body = (path: string): Schema => operation("post", path).requestBody.content["application/json"].schema;
  const keys = (schema: Schema) => Object.keys(schema.properties);

  beforeAll(async () => {
    document = await serviceOpenApiDocument();
  }, 60_000);

  it("lists exactly the fields of each object the service answers", () => {
    expect(tableFields("### Currency (CurrencyInfo)")).toEqual(keys(ok("get", "/public/v1/currencies").items));
    expect(tableFields("### Country (CountryInfo)")).toEqual(keys(ok("get", "/public/v1/countries").items));
    expect(tableFields("### Merchant (PublicMerchantInfo)")).toEqual(keys(ok("get", "/public/v1/me")));
    expect(tableFields("### Invoice (PublicCreatedInvoiceResponse)")).toEqual(
      keys(ok("get", "/public/v1/invoices/{id}")),
    );
    expect(tableFields("### Fee estimate (CalculatedInvoiceFeeResult)").sort()).toEqual(
      keys(ok("post", "/public/v1/invoices/estimateFees")).sort(),
    );
    expect(tableFields("### Withdrawal request (PublicWithdrawalRequest)")).toEqual(
      keys(ok("post", "/public/v1/withdrawals/create").properties.request),
    );
    expect(tableFields("### Refund request (PublicRefundRequest)")).toEqual(
      keys(ok("post", "/public/v1/refunds/refundCrypto").properties.request),
    );
  });

  it("lists exactly the fields of each request body the service takes", () => {
    const sorted = (fields: string[]) => [...fields].sort();
    expect(sorted(tableFields("### CreateInvoice body"))).toEqual(sorted(keys(body("/public/v1/invoices/create"))));
    expect(sorted(tableFields("### EstimateFees body"))).toEqual(
      sorted(keys(body("/public/v1/invoices/estimateFees"))),
    );
    expect(sorted(tableFields("### CreateWithdrawal body"))).toEqual(
      sorted(keys(body("/public/v1/withdrawals/create"))),
    );
    expect(sorted(tableFields("### RefundCrypto body"))).toEqual(sorted(keys(body("/public/v1/refunds/refundCrypto"))));
    expect(sorted(tableFields("### RefundFiat body"))).toEqual(sorted(keys(body("/public/v1/refunds/refundFiat"))));
  });

  it("names every operation of the interface with the route the service serves", () => {
    // The interface is every /public/v1 route outside the additive extensions (their own section).
    const served: string[] = [];
    for (const [path, item] of Object.entries<Schema>(document.paths)) {
      for (const op of Object.values<Schema>(item)) {
        if (path.startsWith("/public/v1/") && !op.tags?.includes("extensions")) served.push(op.operationId);
      }
    }
    const rows = tableFields("## Operations");
    expect([...rows].sort()).toEqual(served.sort());
    for (const row of DOC.split("\n").filter((line) => /^\| [A-Z][A-Za-z]+ \| (GET|POST) `/.test(line))) {
      const [, name, method, path] = /^\| (\w+) \| (GET|POST) `([^`]+)`/.exec(row)!;
      expect(operation(method!.toLowerCase(), path!)?.operationId, row).toBe(name);
    }
  });

  it("has a signing example whose openssl command gives the signature it shows", () => {
    const command = /Reproduce it with `openssl`:\n\n```sh\n([\s\S]*?)\n```/.exec(DOC)?.[1];
    const shown = /x-service-request-signature: v1=([0-9a-f]{64})/.exec(DOC)?.[1];
    expect(command).toBeDefined();
    expect(shown).toBeDefined();
    const output = execFileSync("bash", ["-c", command!], { encoding: "utf8" });
    expect(output.trim().split(" ").at(-1)).toBe(shown);
  });
});
