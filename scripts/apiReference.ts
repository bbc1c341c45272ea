// docs/api-reference.md rendered from the service's own OpenAPI document and its table of error codes.
import { ERROR_STATUS } from "../src/http/problem.ts";

export const API_REFERENCE_PATH = "docs/api-reference.md";

type Schema = Record<string, any>;
type Document = Record<string, any>;

const METHODS = ["get", "post", "put", "patch", "delete"] as const;
/** Nested objects are flattened into dotted rows down to this depth; deeper ones are named, not expanded. */
const MAX_DEPTH = 6;

const TAG_TITLES: Record<string, string> = {
  reference: "Reference data (no credentials)",
  merchant: "Merchant",
  invoices: "Invoices",
  withdrawals: "Withdrawals (signed)",
  refunds: "Refunds (signed)",
  extensions: "API extensions",
  sandbox: "Sandbox (sandbox mode only)",
  operator: "Operator API",
  dashboard: "Dashboard API",
  operations: "Operations",
};

/** Text safe inside a Markdown table cell: one line, no column breaks. */
function cell(text: string): string {
  return text
    .replace(/\r?\n+/g, " ")
    .replace(/\|/g, "\\|")
    .trim();
}

function resolve(document: Document, schema: Schema): Schema {
  let current = schema;
  for (let hops = 0; typeof current.$ref === "string" && hops < 10; hops++) {
    const path = (current.$ref as string).replace(/^#\//, "").split("/");
    current = path.reduce<any>((node, key) => node?.[key], document) ?? {};
  }
  return current;
}

/** The enum values of a schema that is an enum or a union of single-value enums (TypeBox's literal unions). */
function enumValues(schema: Schema): unknown[] | null {
  if (Array.isArray(schema.enum)) return schema.enum;
  if (schema.const !== undefined) return [schema.const];
  const union = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(union) && union.length > 0) {
    const values: unknown[] = [];
    for (const member of union) {
      const inner = enumValues(member);
      if (inner === null) return null;
      values.push(...inner);
    }
    return values;
  }
  return null;
}

/** A schema's type in words: `string`, `integer`, `string or number`, `array of object`, nullability included. */
function typeOf(document: Document, raw: Schema): { type: string; nullable: boolean } {
  const schema = resolve(document, raw);
  const union = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(union)) {
    const parts = union.map((member: Schema) => typeOf(document, member));
    const nonNull = parts.filter((part) => part.type !== "null");
    const names = [...new Set(nonNull.map((part) => part.type))];
    return {
      type: names.join(" or ") || "null",
      nullable: parts.some((part) => part.nullable || part.type === "null"),
    };
  }
  const types: string[] = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  const nullable = types.includes("null") || schema.nullable === true;
  const named = types.filter((type) => type !== "null");
  if (named.length === 0) return { type: nullable ? "null" : "any", nullable };
  const words = named.map((type) => {
    if (type === "array") return `array of ${schema.items ? typeOf(document, schema.items).type : "any"}`;
    if (type === "string" && typeof schema.format === "string") return `string (${schema.format})`;
    return type;
  });
  return { type: words.join(" or "), nullable };
}

/** Constraints and meaning of one field, in words. */
function notes(document: Document, raw: Schema, alreadySaid = ""): string {
  const schema = resolve(document, raw);
  const parts: string[] = [];
  const values = enumValues(schema);
  if (values !== null && values.length > 0) parts.push(`one of ${values.map((v) => `\`${String(v)}\``).join(", ")}`);
  const union = schema.anyOf ?? schema.oneOf;
  const scalar = Array.isArray(union) ? union.map((member: Schema) => resolve(document, member)) : [schema];
  for (const member of scalar) {
    if (member.minLength !== undefined || member.maxLength !== undefined) {
      parts.push(`length ${member.minLength ?? 0}–${member.maxLength ?? "∞"}`);
    }
    if (member.minimum !== undefined || member.maximum !== undefined) {
      parts.push(`${member.minimum ?? "−∞"} to ${member.maximum ?? "∞"}`);
    }
    if (typeof member.pattern === "string") parts.push(`pattern \`${member.pattern}\``);
  }
  if (schema.minItems !== undefined || schema.maxItems !== undefined) {
    parts.push(`${schema.minItems ?? 0} to ${schema.maxItems ?? "∞"} items`);
  }
  if (schema.minProperties !== undefined) parts.push(`at least ${schema.minProperties} field(s)`);
  if (schema.default !== undefined) parts.push(`default \`${JSON.stringify(schema.default)}\``);
  const description = typeof schema.description === "string" ? schema.description : "";
  const said = `${alreadySaid} ${description}`;
  // A constraint the description already states (`1 to 100, default 20`) is not repeated.
  const extra = [...new Set(parts)].filter((part) => !said.includes(part));
  return [description, ...extra].filter((part) => part !== "").join("; ");
}

interface Row {
  field: string;
  type: string;
  required: boolean;
  nullable: boolean;
  notes: string;
}

/** An object schema's fields as rows, nested objects and arrays of objects flattened as `a.b` and `a[].b`. */
function rows(document: Document, raw: Schema, prefix: string, depth: number): Row[] {
  const schema = resolve(document, raw);
  const properties: Record<string, Schema> | undefined = schema.properties;
  if (properties === undefined) return [];
  const required = new Set<string>(Array.isArray(schema.required) ? schema.required : []);
  const out: Row[] = [];
  for (const [name, property] of Object.entries(properties)) {
    const field = `${prefix}${name}`;
    const { type, nullable } = typeOf(document, property);
    out.push({ field, type, required: required.has(name), nullable, notes: notes(document, property) });
    if (depth >= MAX_DEPTH) continue;
    const inner = objectInside(document, property);
    if (inner !== null) out.push(...rows(document, inner.schema, `${field}${inner.suffix}.`, depth + 1));
  }
  return out;
}

/** The object a field holds (itself, an array's items, or the one non-null member of a union), if any. */
function objectInside(document: Document, raw: Schema): { schema: Schema; suffix: string } | null {
  const schema = resolve(document, raw);
  if (schema.properties !== undefined) return { schema, suffix: "" };
  if (schema.items !== undefined) {
    const inner = objectInside(document, schema.items);
    return inner === null ? null : { schema: inner.schema, suffix: `[]${inner.suffix}` };
  }
  const union = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(union)) {
    const objects = union
      .map((member: Schema) => objectInside(document, member))
      .filter((inner): inner is { schema: Schema; suffix: string } => inner !== null);
    if (objects.length === 1) return objects[0]!;
  }
  return null;
}

function fieldTable(document: Document, schema: Schema, closedText: string): string[] {
  let list = rows(document, schema, "", 0);
  let closedSchema = resolve(document, schema);
  if (list.length === 0) {
    // A top-level array of objects: its elements' fields, as `[].field`.
    const inner = objectInside(document, schema);
    if (inner !== null && inner.suffix !== "") {
      list = rows(document, inner.schema, `${inner.suffix}.`, 1);
      closedSchema = resolve(document, inner.schema);
    }
  }
  if (list.length === 0) {
    const { type, nullable } = typeOf(document, schema);
    const extra = notes(document, schema);
    return [`A JSON ${type}${nullable ? " or null" : ""}${extra ? ` (${extra})` : ""}.`, ""];
  }
  const closed = closedSchema.additionalProperties === false;
  const lines = ["| field | type | required | nullable | notes |", "| - | - | - | - | - |"];
  for (const row of list) {
    lines.push(
      `| \`${row.field}\` | ${cell(row.type)} | ${row.required ? "yes" : "no"} | ${row.nullable ? "yes" : "no"} | ${cell(row.notes)} |`,
    );
  }
  lines.push("");
  if (closed) lines.push(closedText, "");
  return lines;
}

function isProblem(document: Document, schema: Schema | undefined): boolean {
  if (schema === undefined) return false;
  return (
    schema.$ref === "#/components/schemas/Problem" ||
    resolve(document, schema) === document.components?.schemas?.Problem
  );
}

function anchorOf(title: string): string {
  return title
    .toLowerCase()
    .replace(/[^a-z0-9 -]/g, "")
    .replace(/ /g, "-");
}

function securityText(document: Document, operation: Schema): string {
  const requirements: Record<string, unknown>[] = operation.security ?? document.security ?? [];
  if (requirements.length === 0) return "none";
  const schemes = document.components?.securitySchemes ?? {};
  return requirements
    .map((requirement) =>
      Object.keys(requirement)
        .map((name) => {
          const scheme = schemes[name] ?? {};
          if (scheme.type === "apiKey") return `\`${scheme.name}\` ${scheme.in === "cookie" ? "cookie" : "header"}`;
          if (scheme.type === "http" && scheme.scheme === "bearer") return "`authorization: Bearer <token>`";
          return name;
        })
        .join(" and "),
    )
    .join(", or ");
}

interface Operation {
  method: string;
  path: string;
  operation: Schema;
}

/** Every operation grouped by its first tag, tags in the order they first appear in the document. */
function byTag(document: Document): Map<string, Operation[]> {
  const groups = new Map<string, Operation[]>();
  for (const [path, item] of Object.entries<Record<string, Schema>>(document.paths ?? {})) {
    for (const method of METHODS) {
      const operation = item[method];
      if (operation === undefined || operation.hide === true) continue;
      const tag: string = operation.tags?.[0] ?? "other";
      if (!groups.has(tag)) groups.set(tag, []);
      groups.get(tag)!.push({ method: method.toUpperCase(), path, operation });
    }
  }
  return groups;
}

function renderOperation(document: Document, { method, path, operation }: Operation): string[] {
  const title = `${method} ${path}`;
  const lines = [`### \`${title}\``, ""];
  const name = typeof operation.operationId === "string" ? `**${operation.operationId}**` : "";
  const summary = [name, typeof operation.summary === "string" ? operation.summary : ""].filter(Boolean).join(": ");
  if (summary) lines.push(`${summary}.`.replace(/\.\.$/, "."), "");
  if (typeof operation.description === "string") lines.push(operation.description, "");
  lines.push(`Credentials: ${securityText(document, operation)}.`, "");

  const parameters: Schema[] = operation.parameters ?? [];
  if (parameters.length > 0) {
    lines.push("Parameters:", "", "| name | in | type | required | notes |", "| - | - | - | - | - |");
    for (const parameter of parameters) {
      const schema = parameter.schema ?? {};
      const extra = [parameter.description, notes(document, schema, parameter.description ?? "")]
        .filter(Boolean)
        .join("; ");
      lines.push(
        `| \`${parameter.name}\` | ${parameter.in} | ${cell(typeOf(document, schema).type)} | ${parameter.required ? "yes" : "no"} | ${cell(extra)} |`,
      );
    }
    lines.push("");
  }

  const body = operation.requestBody?.content;
  if (body !== undefined) {
    for (const [mediaType, content] of Object.entries<Schema>(body)) {
      lines.push(`Request body (\`${mediaType}\`${operation.requestBody.required ? ", required" : ""}):`, "");
      lines.push(
        ...fieldTable(document, content.schema ?? {}, "No other fields are allowed (400 `validation_failed`)."),
      );
    }
  }

  const responses: Record<string, Schema> = operation.responses ?? {};
  const problems: string[] = [];
  lines.push("Responses:", "");
  for (const [status, response] of Object.entries(responses)) {
    const content: Record<string, Schema> = response.content ?? {};
    const first = Object.entries(content)[0];
    if (first !== undefined && isProblem(document, first[1].schema)) {
      problems.push(status);
      continue;
    }
    const description =
      typeof response.description === "string" && response.description !== "Default Response"
        ? ` ${response.description}`
        : "";
    lines.push(
      `**${status}**${first ? ` \`${first[0]}\`` : ""}.${description ? `${description}.`.replace(/\.\.$/, ".") : ""}`,
      "",
    );
    if (first !== undefined && first[1].schema !== undefined)
      lines.push(...fieldTable(document, first[1].schema, "No other fields are present."));
  }
  if (problems.length > 0) {
    lines.push(
      `Errors (\`application/problem+json\`, see [error codes](#error-codes)): ${problems
        .map((status) => `[${status}](#${status})`)
        .join(", ")}.`,
      "",
    );
  }
  return lines;
}

/** The whole Markdown document for an OpenAPI document. */
export function renderApiReference(document: Document): string {
  const groups = byTag(document);
  const info = document.info ?? {};
  const lines: string[] = [
    "<!-- Generated from the service's OpenAPI document by `npm run generate:api-reference` (scripts/generate-api-reference.ts). -->",
    "<!-- Do not edit: test/project/apiReference.test.ts fails when this file and the document differ. -->",
    "",
    "# API reference",
    "",
    `${info.title ?? "The service"}, OpenAPI document version ${info.version ?? "?"}. ${info.description ?? ""}`.trim(),
    "",
    "Every route the service serves, grouped by tag, rendered from the same schemas that validate requests and",
    "answers (the running service serves them at `/openapi.json` and `/docs`). How to use them:",
    "[merchant-api.md](merchant-api.md) (the merchant interface, signing included) and",
    "[integration-guide.md](integration-guide.md). Field tables flatten nested objects: `request.id`",
    "is the `id` of the object in `request`, `data[].id` the `id` of each element of the array `data`,",
    "and `[].ticker` the `ticker` of each element of an answer that is an array.",
    "",
    "## Contents",
    "",
  ];
  for (const [tag, operations] of groups) {
    const title = TAG_TITLES[tag] ?? tag;
    lines.push(`- [${title}](#${anchorOf(title)}) (${operations.length})`);
  }
  lines.push("- [Error codes](#error-codes)", "");
  for (const [tag, operations] of groups) {
    lines.push(`## ${TAG_TITLES[tag] ?? tag}`, "");
    for (const operation of operations) lines.push(...renderOperation(document, operation));
  }
  lines.push(
    "## Error codes",
    "",
    "Every error is RFC 9457 problem details with a stable `code` ([errors.md](errors.md) says when each",
    "is answered). This table is `ERROR_STATUS` of `src/http/problem.ts`:",
    "",
  );
  const codesByStatus = new Map<number, string[]>();
  for (const [code, status] of Object.entries(ERROR_STATUS)) {
    if (!codesByStatus.has(status)) codesByStatus.set(status, []);
    codesByStatus.get(status)!.push(code);
  }
  const problem = document.components?.schemas?.Problem;
  for (const status of [...codesByStatus.keys()].sort((a, b) => a - b)) {
    lines.push(
      `### ${status}`,
      "",
      codesByStatus
        .get(status)!
        .map((code) => `\`${code}\``)
        .join(", "),
      "",
    );
  }
  if (problem !== undefined) {
    lines.push("### The problem body", "", ...fieldTable(document, problem, "No other fields are present."));
  }
  return `${lines
    .join("\n")
    .replace(/\n{3,}/g, "\n\n")
    .trimEnd()}\n`;
}
