// Function lengths in src/: lists every function over the limits (70 lines without a comment saying why, 120 at all) and the largest, for the style rule and its reports.
//
// Usage: node --import tsx scripts/function-lengths.ts [--all] [--json]
// A function counts from its first line (its name, or the arrow's parameters) to its last;
// a function inside another counts in both. One over 70 lines is excused when the comment just above
// it (or above its declaration or property) says `longer than 70 lines:` and why. Exit status 1 when a function breaks a rule.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
// TypeScript 7's compiler has no JavaScript parser API; Babel's (in the tree through Vite) parses TypeScript.
import { parse } from "@babel/parser";

const ROOT = join(import.meta.dirname, "..");
/** Split by others (issue 31): measured, but not counted against the rule. */
const SOFT_LIMIT = 70;
const HARD_LIMIT = 120;
const EXCUSE = /longer than 70 lines:/i;
const FUNCTION_TYPES = new Set([
  "FunctionDeclaration",
  "FunctionExpression",
  "ArrowFunctionExpression",
  "ObjectMethod",
  "ClassMethod",
  "ClassPrivateMethod",
]);
/** Nodes between a function and the statement or property whose comment may excuse it. */
const WRAPPERS = new Set([
  "VariableDeclarator",
  "VariableDeclaration",
  "ExportNamedDeclaration",
  "ExportDefaultDeclaration",
  "ObjectProperty",
  "ClassProperty",
  "CallExpression",
  "AwaitExpression",
  "ReturnStatement",
]);

export interface FunctionLength {
  file: string;
  name: string;
  line: number;
  lines: number;
  excused: boolean;
}

interface AstNode {
  type: string;
  loc?: { start: { line: number }; end: { line: number } };
  leadingComments?: { value: string }[] | null;
  [key: string]: unknown;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir).sort()) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path));
    else if (entry.endsWith(".ts") && !entry.endsWith(".d.ts")) out.push(path);
  }
  return out;
}

function keyName(key: unknown): string | null {
  const k = key as AstNode | undefined;
  if (!k) return null;
  if (k.type === "Identifier") return String((k as { name?: unknown }).name ?? "");
  if (k.type === "PrivateName") return `#${String((k as { id?: { name?: unknown } }).id?.name ?? "")}`;
  if (k.type === "StringLiteral") return String(k.value);
  return null;
}

function nameOf(node: AstNode, parents: readonly AstNode[]): string {
  const own = keyName(node.id) ?? keyName(node.key);
  if (own) return own;
  for (const p of [...parents].reverse()) {
    const named = keyName(p.id) ?? keyName(p.key);
    if (named) return `${named} (inner)`;
  }
  return "(anonymous)";
}

function excused(node: AstNode, parents: readonly AstNode[]): boolean {
  const chain = [node];
  for (let i = parents.length - 1; i >= 0; i--) {
    const p = parents[i] as AstNode;
    if (!WRAPPERS.has(p.type)) break;
    chain.push(p);
  }
  return chain.some((n) => (n.leadingComments ?? []).some((c) => EXCUSE.test(c.value)));
}

export function measureFile(path: string): FunctionLength[] {
  const text = readFileSync(path, "utf8");
  const ast = parse(text, { sourceType: "module", plugins: ["typescript"] }) as unknown as AstNode;
  const file = relative(ROOT, path);
  const found: FunctionLength[] = [];
  const visit = (node: AstNode, parents: AstNode[]): void => {
    if (FUNCTION_TYPES.has(node.type) && node.loc && node.body) {
      const lines = node.loc.end.line - node.loc.start.line + 1;
      found.push({
        file,
        name: nameOf(node, parents),
        line: node.loc.start.line,
        lines,
        excused: excused(node, parents),
      });
    }
    parents.push(node);
    for (const [key, value] of Object.entries(node)) {
      if (key === "loc" || key.endsWith("Comments")) continue;
      for (const child of Array.isArray(value) ? value : [value])
        if (child && typeof child === "object" && typeof (child as AstNode).type === "string")
          visit(child as AstNode, parents);
    }
    parents.pop();
  };
  visit(ast, []);
  return found;
}

export function measure(dir = join(ROOT, "src")): FunctionLength[] {
  return sourceFiles(dir).flatMap(measureFile);
}

function main(argv: readonly string[]): number {
  const all = measure();
  const counted = all;
  const over70 = counted.filter((f) => f.lines > SOFT_LIMIT);
  const over120 = counted.filter((f) => f.lines > HARD_LIMIT);
  const broken = counted.filter((f) => f.lines > HARD_LIMIT || (f.lines > SOFT_LIMIT && !f.excused));
  const largest = [...counted].sort((a, b) => b.lines - a.lines)[0];
  const summary = {
    functions: counted.length,
    over70: over70.length,
    over70Unexcused: over70.filter((f) => !f.excused).length,
    over120: over120.length,
    largest: largest ? `${largest.file}:${largest.line} ${largest.name} (${largest.lines} lines)` : null,
  };
  if (argv.includes("--json")) {
    console.log(JSON.stringify({ summary, over70 }, null, 2));
  } else {
    const shown = argv.includes("--all") ? over70 : broken;
    for (const f of shown.sort((a, b) => b.lines - a.lines))
      console.log(`${String(f.lines).padStart(4)}  ${f.file}:${f.line}  ${f.name}${f.excused ? "  (excused)" : ""}`);
    console.log(summary);
  }
  return broken.length > 0 ? 1 : 0;
}

if (process.argv[1] && import.meta.filename === process.argv[1]) process.exitCode = main(process.argv.slice(2));
