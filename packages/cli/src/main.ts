#!/usr/bin/env node
// payments: the command line of the merchant payment service (operator API and merchant API). Exit 0 ok, 1 API error, 2 usage.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import {
  CallbackVerificationError,
  PaymentsApiError,
  PaymentsClient,
  PaymentsConnectionError,
} from "@merchant-payments/sdk";
import { AdminClient } from "./admin.ts";
import { type Command, type Context, commands, type OptionSpec, UsageError } from "./commands.ts";
import { render } from "./output.ts";

const GLOBAL_OPTIONS: Record<string, OptionSpec> = {
  "base-url": { type: "string", description: "service address (PAYMENTS_BASE_URL, default http://127.0.0.1:8080)" },
  "api-key": { type: "string", description: "merchant API key (PAYMENTS_API_KEY)" },
  "secret-key": { type: "string", description: "merchant secret key, for signed operations (PAYMENTS_SECRET_KEY)" },
  "admin-token": { type: "string", description: "operator token (PAYMENTS_ADMIN_TOKEN)" },
  "timeout-ms": { type: "string", description: "time allowed per attempt (default 30000)" },
  "max-retries": { type: "string", description: "safe retries of merchant calls (default 2)" },
  json: { type: "boolean", description: "print JSON instead of tables" },
  "show-secrets": {
    type: "boolean",
    description: "print secrets (secret keys, callback secrets) instead of hiding them",
  },
  help: { type: "boolean", description: "show help" },
};

const EXIT_OK = 0;
const EXIT_API = 1;
const EXIT_USAGE = 2;

function version(): string {
  const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
  return manifest.version;
}

function optionLines(options: Record<string, OptionSpec>): string[] {
  return Object.entries(options).map(
    ([name, spec]) =>
      `  --${name}${spec.type === "string" ? " <value>" : ""}`.padEnd(34) +
      spec.description +
      (spec.required ? " (required)" : ""),
  );
}

function help(command?: Command): string {
  if (command) {
    const args = (command.args ?? []).map((a) => ` <${a}>`).join("");
    return [
      `Usage: payments ${command.name}${args} [options]`,
      "",
      command.summary,
      "",
      ...(command.options ? ["Options:", ...optionLines(command.options), ""] : []),
      "Global options:",
      ...optionLines(GLOBAL_OPTIONS),
    ].join("\n");
  }
  const width = Math.max(...commands.map((c) => c.name.length + (c.args ?? []).join(" ").length + 4));
  return [
    `payments ${version()}: the merchant payment service from the command line`,
    "",
    "Usage: payments <command> [arguments] [options]",
    "",
    "Commands:",
    ...commands.map(
      (c) => `  ${`${c.name} ${(c.args ?? []).map((a) => `<${a}>`).join(" ")}`.padEnd(width)}${c.summary}`,
    ),
    "",
    "Global options:",
    ...optionLines(GLOBAL_OPTIONS),
    "",
    "Exit status: 0 success, 1 API error (its problem printed), 2 usage error.",
    "Run `payments <command> --help` for a command's options.",
  ].join("\n");
}

/** The command named by the first one or two arguments (the command comes before its options). */
function findCommand(argv: string[]): { command: Command; rest: string[] } | undefined {
  for (const length of [2, 1]) {
    const words = argv.slice(0, length);
    if (words.length < length || words.some((w) => w.startsWith("-"))) continue;
    const command = commands.find((c) => c.name === words.join(" "));
    if (command) return { command, rest: argv.slice(length) };
  }
  return undefined;
}

interface Io {
  out(text: string): void;
  err(text: string): void;
}

export async function main(argv: string[], env: NodeJS.ProcessEnv, io: Io, signal: AbortSignal): Promise<number> {
  if (argv.length === 0 || argv[0] === "--help" || argv[0] === "-h" || argv[0] === "help") {
    io.out(help());
    return argv.length === 0 ? EXIT_USAGE : EXIT_OK;
  }
  if (argv[0] === "--version") {
    io.out(version());
    return EXIT_OK;
  }
  const found = findCommand(argv);
  if (!found) {
    const group = commands.filter((c) => c.name.startsWith(`${argv[0]} `));
    if (group.length > 0 && !argv[1]?.match(/^[a-z]/)) {
      // `payments invoices`: the group's commands.
      io.err(
        `payments ${argv[0]}: choose one of\n${group.map((c) => `  payments ${c.name}  ${c.summary}`).join("\n")}`,
      );
      return EXIT_USAGE;
    }
    io.err(`payments: unknown command "${argv.slice(0, 2).join(" ")}"\n\n${help()}`);
    return EXIT_USAGE;
  }
  const { command, rest } = found;
  const specs = { ...GLOBAL_OPTIONS, ...command.options };
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: rest,
      options: Object.fromEntries(Object.entries(specs).map(([name, spec]) => [name, { type: spec.type }])),
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    io.err(`payments ${command.name}: ${(error as Error).message}\n\n${help(command)}`);
    return EXIT_USAGE;
  }
  const options = parsed.values as Record<string, string | boolean | undefined>;
  if (options.help) {
    io.out(help(command));
    return EXIT_OK;
  }
  const json = options.json === true;
  const showSecrets = options["show-secrets"] === true;
  try {
    const expected = command.args ?? [];
    if (parsed.positionals.length !== expected.length) {
      throw new UsageError(
        expected.length === 0
          ? `takes no arguments`
          : `expects ${expected.map((a) => `<${a}>`).join(" ")}, got ${parsed.positionals.length} argument(s)`,
      );
    }
    for (const [name, spec] of Object.entries(command.options ?? {})) {
      if (spec.required && (options[name] === undefined || options[name] === ""))
        throw new UsageError(`--${name} is required`);
    }
    const setting = (name: string, variable: string) => {
      const value = options[name] ?? env[variable];
      return typeof value === "string" && value !== "" ? value : undefined;
    };
    const baseUrl = setting("base-url", "PAYMENTS_BASE_URL") ?? "http://127.0.0.1:8080";
    const number = (name: string, fallback: number) => {
      const value = options[name];
      if (value === undefined) return fallback;
      if (typeof value !== "string" || !/^[0-9]{1,9}$/.test(value))
        throw new UsageError(`--${name} must be a whole number`);
      return Number(value);
    };
    const timeoutMs = number("timeout-ms", 30_000);
    const maxRetries = number("max-retries", 2);
    if (timeoutMs === 0 || maxRetries > 10)
      throw new UsageError("--timeout-ms must be positive, --max-retries at most 10");
    try {
      new URL(baseUrl);
    } catch {
      throw new UsageError(`the base URL "${baseUrl}" is not a URL`);
    }
    const ctx: Context = {
      args: parsed.positionals,
      options,
      signal,
      log: (line) => io.err(line),
      baseUrl,
      admin: () => {
        const token = setting("admin-token", "PAYMENTS_ADMIN_TOKEN");
        if (!token) throw new UsageError("this is an operator command: give --admin-token or set PAYMENTS_ADMIN_TOKEN");
        return new AdminClient(baseUrl, token, timeoutMs);
      },
      merchant: () => {
        const apiKey = setting("api-key", "PAYMENTS_API_KEY");
        const secretKey = setting("secret-key", "PAYMENTS_SECRET_KEY");
        const needsKey = !["version", "currencies list", "countries list"].includes(command.name);
        if (needsKey && !apiKey) throw new UsageError("give --api-key or set PAYMENTS_API_KEY");
        const signed = [
          "withdrawals create",
          "refunds crypto",
          "refunds fiat",
          "refunds create",
          "subscriptions create",
        ].includes(command.name);
        if (signed && !secretKey)
          throw new UsageError("this operation is signed: give --secret-key or set PAYMENTS_SECRET_KEY");
        return new PaymentsClient({
          baseUrl,
          apiKey: apiKey ?? "",
          ...(secretKey ? { secretKey } : {}),
          timeoutMs,
          maxRetries,
        });
      },
    };
    const result = await command.run(ctx);
    if (command.printsNothing) return EXIT_OK;
    const rendered = render(result, {
      json,
      showSecrets,
      ...(command.columns ? { columns: command.columns } : {}),
      ...(command.showsOnce ? { showsOnce: command.showsOnce } : {}),
    });
    io.out(rendered.text);
    for (const note of rendered.notes) io.err(note);
    return EXIT_OK;
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`payments ${command.name}: ${error.message}\n\nRun \`payments ${command.name} --help\` for its options.`);
      return EXIT_USAGE;
    }
    if (error instanceof PaymentsApiError) {
      const problem = error.problem ?? { status: error.status, code: error.code, detail: error.message };
      const withId = error.requestId ? { ...problem, requestId: error.requestId } : problem;
      if (json) io.out(JSON.stringify(withId, null, 2));
      else {
        const lines = [`Error ${error.status} ${error.code}: ${error.problem?.detail ?? error.message}`];
        for (const e of error.problem?.errors ?? []) lines.push(`  ${e.pointer || "(body)"}: ${e.detail}`);
        if (error.requestId) lines.push(`Request id: ${error.requestId} (retry with --request-id ${error.requestId})`);
        io.err(lines.join("\n"));
      }
      return EXIT_API;
    }
    if (error instanceof PaymentsConnectionError || error instanceof CallbackVerificationError) {
      const id =
        "requestId" in error && error.requestId ? ` (request id ${error.requestId}; retry with --request-id)` : "";
      if (json)
        io.out(
          JSON.stringify(
            {
              code: error.code,
              detail: error.message,
              ...("requestId" in error && error.requestId ? { requestId: error.requestId } : {}),
            },
            null,
            2,
          ),
        );
      else io.err(`Error ${error.code}: ${error.message}${id}`);
      return EXIT_API;
    }
    if (error instanceof TypeError || error instanceof RangeError) {
      // The SDK refuses bad arguments (a request id that is not a UUID, …) before any request.
      io.err(`payments ${command.name}: ${error.message}`);
      return EXIT_USAGE;
    }
    throw error;
  }
}

const controller = new AbortController();
process.once("SIGINT", () => controller.abort());
process.once("SIGTERM", () => controller.abort());
const code = await main(
  process.argv.slice(2),
  process.env,
  { out: (t) => process.stdout.write(`${t}\n`), err: (t) => process.stderr.write(`${t}\n`) },
  controller.signal,
);
process.exitCode = code;
