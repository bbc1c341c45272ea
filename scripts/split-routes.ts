// One-off refactoring tool (issue 31): splits a route-registration function into one function per route, keeping each route's lines byte for byte. Usage: node --import tsx scripts/split-routes.ts <file> <function>
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";

const { parse } = createRequire(import.meta.url)("@babel/parser");

const [file, fnName] = process.argv.slice(2) as [string, string];
const text = readFileSync(file, "utf8");
const ast = parse(text, { sourceType: "module", plugins: ["typescript"] }) as any;
let target: any = null;
for (const st of ast.program.body) {
  const d = st.type === "ExportNamedDeclaration" ? st.declaration : st;
  if (d?.type === "FunctionDeclaration" && d.id?.name === fnName) target = { st, d };
}
if (!target) throw new Error("not found");
const { st, d } = target;
const body = d.body.body as any[];
const appName = d.params[0]?.name;
const isRoute = (s: any) =>
  s.type === "ExpressionStatement" &&
  s.expression.type === "CallExpression" &&
  s.expression.callee.type === "MemberExpression" &&
  s.expression.callee.object.type === "Identifier" &&
  s.expression.callee.object.name === appName;
const isDecl = (s: any) => s.type === "VariableDeclaration" || s.type === "FunctionDeclaration";
const isPass = (s: any) => s.type === "ExpressionStatement" && !isRoute(s);
const bad = body.filter((s) => !isRoute(s) && !isDecl(s) && !isPass(s));
if (bad.length > 0) {
  console.error(
    `${file} ${fnName}: ${bad.length} statements other than routes and declarations (lines ${bad.map((b) => b.loc.start.line).join(",")})`,
  );
  process.exit(2);
}
// Declarations that make something with state (a hook with its cache) stay one, made by the
// registering function and passed to each route: only `const auth = merchantAuth(ctx)` here.
const HOISTED = new Set(["auth"]);
const hoisted = body
  .filter(isDecl)
  .filter(
    (s: any) =>
      s.type === "VariableDeclaration" && s.declarations.length === 1 && HOISTED.has(s.declarations[0].id.name),
  );
const decls = body
  .filter(isDecl)
  .filter((s: any) => !hoisted.includes(s))
  .map((s: any) => ({
    src: text.slice(s.start, s.end),
    names: s.type === "FunctionDeclaration" ? [s.id.name] : s.declarations.flatMap((dd: any) => declaredNames(dd.id)),
    line: s.loc.start.line,
  }));
function declaredNames(id: any): string[] {
  if (id.type === "Identifier") return [id.name];
  if (id.type === "ObjectPattern") return id.properties.flatMap((p: any) => declaredNames(p.value ?? p.argument));
  if (id.type === "ArrayPattern") return id.elements.filter(Boolean).flatMap((e: any) => declaredNames(e));
  if (id.type === "AssignmentPattern") return declaredNames(id.left);
  if (id.type === "RestElement") return declaredNames(id.argument);
  return [];
}
const uses = (src: string, name: string) => new RegExp(`(?<![\\w$.])${name.replace("$", "\\$")}(?![\\w$])`).test(src);
const neededBy = (src: string) => {
  const needed = new Set<number>();
  let changed = true;
  while (changed) {
    changed = false;
    decls.forEach((dcl, i) => {
      if (needed.has(i)) return;
      const texts = [src, ...[...needed].map((j) => decls[j]?.src ?? "")];
      if (dcl.names.some((n: string) => texts.some((t) => uses(t, n)))) {
        needed.add(i);
        changed = true;
      }
    });
  }
  return [...needed].sort((a, b) => a - b).map((i) => decls[i]?.src ?? "");
};
const hoistedParams = hoisted
  .map((h: any) => `, ${h.declarations[0].id.name}: ReturnType<typeof ${h.declarations[0].init.callee.name}>`)
  .join("");
const paramsText = text.slice(d.params[0].start, d.params[d.params.length - 1].end) + hoistedParams;
const argsText = [
  ...d.params.map((p: any) => (p.type === "AssignmentPattern" ? p.left.name : p.name)),
  ...hoisted.map((h: any) => h.declarations[0].id.name),
].join(", ");
const hoistedText = hoisted.map((h: any) => `  ${text.slice(h.start, h.end)}\n`).join("");
const returnType = d.returnType ? text.slice(d.returnType.start, d.returnType.end) : ": void";
const names = new Set<string>();
const pieces: { name: string; src: string; comments: string }[] = [];
const mainCalls: string[] = [];
for (const s of body.filter((st) => isRoute(st) || isPass(st))) {
  if (isPass(s)) {
    mainCalls.push(`  ${text.slice(s.start, s.end)}`);
    continue;
  }
  const src = text.slice(s.start, s.end);
  const op = /operationId:\s*"(\w+)"/.exec(src)?.[1];
  const method = s.expression.callee.property.name;
  const path = s.expression.arguments[0];
  const pathText = path ? text.slice(path.start, path.end) : "";
  let name =
    op !== undefined
      ? `register${op[0]?.toUpperCase()}${op.slice(1)}`
      : `${fnName}${method[0].toUpperCase()}${method.slice(1)}${pathText
          .replace(/\$\{[^}]*\}/g, "")
          .split(/[^A-Za-z0-9]+/)
          .filter(Boolean)
          .map((w) => w[0]?.toUpperCase() + w.slice(1))
          .join("")}`;
  while (names.has(name)) name += "Again";
  names.add(name);
  // Leading comments of the statement go with it.
  const lead = (s.leadingComments ?? []).map((c: any) => text.slice(c.start, c.end));
  const locals = neededBy(src);
  pieces.push({ name, src: [...locals, src].join("\n  "), comments: lead.join("\n  ") });
  mainCalls.push(`  ${name}(${argsText});`);
}
const start = st.start;
const end = st.end;
// The original keeps its doc comment (leading comments of st are before st.start).
const header = text.slice(st.start, d.body.start);
const calls = mainCalls.join("\n");
const passNeeds = mainCalls.filter((c) => !pieces.some((p) => c.includes(`${p.name}(`)));
const mainDecls = decls.filter((dcl) => passNeeds.some((c) => dcl.names.some((n: string) => uses(c, n))));
const functions = pieces
  .map((p) => `function ${p.name}(${paramsText})${returnType} {\n  ${p.comments ? `${p.comments}\n  ` : ""}${p.src}\n}`)
  .join("\n\n");
// Remove the statements' own leading comments from between them (they moved with the statements).
const out = `${text.slice(0, start)}${header}{\n${hoistedText}${mainDecls.map((m) => `  ${m.src}\n`).join("")}${calls}\n}\n\n${functions}${text.slice(end)}`;
writeFileSync(file, out);
console.log(`${file} ${fnName}: ${pieces.length} routes: ${pieces.map((p) => p.name).join(", ")}`);
const shared = decls.filter((dcl) => pieces.filter((p) => dcl.names.some((n: string) => uses(p.src, n))).length > 1);
for (const dcl of shared)
  console.log(`  SHARED (now one per route): line ${dcl.line}: ${dcl.src.slice(0, 140).replace(/\n/g, " ")}`);
