// Builds the HTTP service: one Fastify instance with the public, operator and sandbox surfaces.
import { randomUUID } from "node:crypto";
import { AjvCompiler } from "@fastify/ajv-compiler";
import { SerializerSelector } from "@fastify/fast-json-stringify-compiler";
import rateLimit from "@fastify/rate-limit";
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifySchemaCompiler,
  type FastifyServerOptions,
} from "fastify";
import type { ServiceContext } from "../app/context.ts";
import type { Config } from "../config.ts";
import { addressLimit } from "./addressLimits.ts";
import { registerAdminRoutes } from "./admin/index.ts";
import { registerDashboardApi } from "./dashboard/index.ts";
import { registerDashboardPages } from "./dashboard/static.ts";
import { registerDepositAddressPage } from "./depositAddressPage.ts";
import { refuseRepeatedHeaders } from "./headers.ts";
import { registerMetricsHook, registerMetricsRoute } from "./metrics.ts";
import { registerOperationalRoutes } from "./operational.ts";
import { registerPayPage } from "./pay.ts";
import { registerPaymentLinkPage } from "./paymentLinkPage.ts";
import { frameworkErrors, Problem, registerProblemHandlers } from "./problem.ts";
import { registerPublicRoutes } from "./public/index.ts";
import { refuseInvalidQueryText } from "./queryText.ts";
import { registerRefundClaimPage } from "./refundClaimPage.ts";
import { lazyRequestLogger } from "./requestLogger.ts";
import { type App, INTERFACE_VERSION, type RegisteredRoute } from "./routeHost.ts";
import { registerSandboxRoutes, SANDBOX_PREFIX } from "./sandbox/index.ts";
import { ProblemSchema } from "./schemas.ts";
import { repeatedMemberName } from "./strictJson.ts";
import { registerSubscriptionPage } from "./subscriptionPage.ts";
import { registerUnauthenticatedLimits } from "./unauthenticatedLimits.ts";
import { registerStripeWebhook } from "./webhooks/stripe.ts";

export const BODY_LIMIT_BYTES = 64 * 1024;

/** Headers whose values must never reach a log line. */
export const REDACTED = [
  'req.headers["x-api-key"]',
  "req.headers.authorization",
  'req.headers["x-service-request-signature"]',
  // The dashboard's session cookie and CSRF token.
  "req.headers.cookie",
  'req.headers["x-csrf-token"]',
  'res.headers["set-cookie"]',
];

/**
 * Text we accept: well-formed Unicode (no lone surrogates, which I-JSON forbids) and no NUL,
 * which PostgreSQL cannot store and nothing in this interface needs.
 */
export function acceptableText(text: string): boolean {
  return text.isWellFormed() && !text.includes("\u0000");
}

/** Strings and member names are acceptable text, and numbers are within double range (JSON.parse makes 1e400 Infinity). */
function assertAcceptableValues(value: unknown, depth = 0): void {
  if (typeof value === "string") {
    if (!acceptableText(value))
      throw new Problem("invalid_text", "Strings must be well-formed Unicode without NUL characters.");
    return;
  }
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new Problem("malformed_json", "A number in the body is out of range.");
    return;
  }
  if (typeof value !== "object" || value === null) return;
  // The body limit bounds the depth too; this bound only keeps the walk off the native stack's edge.
  if (depth > 1000) throw new Problem("malformed_json", "The JSON body is nested too deeply.");
  for (const [key, item] of Object.entries(value)) {
    if (!acceptableText(key))
      throw new Problem("invalid_text", "Member names must be well-formed Unicode without NUL characters.");
    assertAcceptableValues(item, depth + 1);
  }
}

/**
 * JSON bodies, strictly: RFC 8259 syntax (V8's native parser, a third of the cost of a JavaScript
 * one), no repeated member names (I-JSON, which RFC 8785 requires; JSON.parse keeps the last),
 * numbers as doubles within range, and acceptable text.
 */
export function parseJsonBody(text: string): unknown {
  // An empty body is no body: routes that need one say so through their schema.
  if (text === "") return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Problem("malformed_json", "The request body is not valid JSON.");
  }
  if (repeatedMemberName(text) !== null) {
    throw new Problem("duplicate_member_name", "The JSON body repeats a member name.");
  }
  assertAcceptableValues(value);
  return value;
}

/** Ajv for request schemas: the interface rejects other properties and types are exact, so no stripping, no coercion. */
export const AJV_OPTIONS = {
  removeAdditional: false,
  coerceTypes: false,
  useDefaults: false,
  allErrors: true,
} as const;

/** JSON bodies only, parsed strictly (parseJsonBody); any other content type is a 415. */
export function acceptStrictJsonOnly(
  app: Pick<FastifyInstance, "removeAllContentTypeParsers" | "addContentTypeParser">,
): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("application/json", { parseAs: "string" }, (_request, body, done) => {
    try {
      done(null, parseJsonBody(body as string));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
}

/** How often Node checks request and header deadlines: a quarter of the shorter one, within 50 ms to 1 s. */
export function checkingIntervalMs(config: Pick<Config, "requestTimeoutMs" | "headersTimeoutMs">): number {
  return Math.min(1000, Math.max(50, Math.floor(Math.min(config.requestTimeoutMs, config.headersTimeoutMs) / 4)));
}

/**
 * Ajv for query strings, path parameters and headers: they arrive as text, so `?limit=20` must
 * become the integer its schema declares. Only there: bodies keep AJV_OPTIONS (no coercion).
 */
export const TEXT_PART_AJV_OPTIONS = { ...AJV_OPTIONS, coerceTypes: true } as const;

/**
 * What a schema compiled to, by its text: every app of a process (the test suites and the
 * simulation build many) compiles each route schema once. An app's external schemas and options
 * are the same code's, so equal schemas compile to the same function in each. Bounded: past
 * COMPILED_SCHEMAS_BOUND entries a schema is compiled again instead of kept.
 */
const compiledSchemas = new Map<string, unknown>();
const COMPILED_SCHEMAS_BOUND = 10_000;

function compiledOnce<T>(schema: unknown, variant: string, compile: () => T): T {
  const key = `${variant}\u0000${JSON.stringify(schema)}`;
  const known = compiledSchemas.get(key);
  if (known !== undefined) return known as T;
  const compiled = compile();
  if (compiledSchemas.size < COMPILED_SCHEMAS_BOUND) compiledSchemas.set(key, compiled);
  return compiled;
}

/**
 * A validator or serializer compiled at its route's first use, not at start: most processes serve
 * few of the routes, and the compiled code of all of them was a large part of the idle heap
 * (docs/performance.md, "Memory"). A validator's `errors` (Ajv's) are passed on as Fastify reads them.
 */
function atFirstCall<F extends (data: unknown) => unknown>(compile: () => F): F {
  let compiled: F | undefined;
  const call = ((data: unknown) => {
    compiled ??= compile();
    const result = compiled(data);
    (call as { errors?: unknown }).errors = (compiled as { errors?: unknown }).errors;
    return result;
  }) as F;
  return call;
}

/**
 * Two validator compilers, chosen by the part of the request a schema describes: bodies strict,
 * the text parts (querystring, params, headers) coerced. Fastify's own compiler, twice; and its own
 * serializer compiler. Each schema is compiled once per process (compiledOnce).
 */
function validatorsByPart(): FastifyServerOptions["schemaController"] {
  type Compile = FastifySchemaCompiler<unknown>;
  type Route = Parameters<Compile>[0];
  // The pool's declared types mix in JTD mode; in the default (JSON Schema) mode it takes Ajv options.
  const pool = AjvCompiler() as unknown as (schemas: unknown, options: Record<string, unknown>) => Compile;
  const buildValidator = (externalSchemas: unknown, ajvOptions: unknown) => {
    const server = (ajvOptions ?? {}) as Record<string, unknown>;
    const body = pool(externalSchemas, { ...server, customOptions: AJV_OPTIONS });
    const text = pool(externalSchemas, { ...server, customOptions: TEXT_PART_AJV_OPTIONS });
    return (route: Route) =>
      atFirstCall(() =>
        route.httpPart === "body"
          ? compiledOnce(route.schema, "body", () => body(route))
          : compiledOnce(route.schema, "text", () => text(route)),
      );
  };
  type Serialize = (route: { schema: unknown; httpStatus?: string; contentType?: string }) => unknown;
  const serializers = SerializerSelector() as unknown as (schemas: unknown, options: unknown) => Serialize;
  const buildSerializer = (externalSchemas: unknown, options: unknown) => {
    const compile = serializers(externalSchemas, options);
    return (route: Parameters<Serialize>[0]) =>
      atFirstCall(() => compiledOnce(route.schema, "serializer", () => compile(route)) as (data: unknown) => unknown);
  };
  return { compilersFactory: { buildValidator: buildValidator as never, buildSerializer: buildSerializer as never } };
}

export interface AppOptions {
  logger?: FastifyBaseLogger | boolean;
  /**
   * Fastify's bound on a plugin's start (its default, 10 s, when unset). The simulation's clock
   * jumps while a process starts, so there it is 0 (none).
   */
  pluginTimeoutMs?: number;
}

export async function buildApp(ctx: ServiceContext, options: AppOptions = {}): Promise<App> {
  const app = createFastify(ctx, options);
  addRequestHooks(app, ctx);
  await registerDocs(app, ctx);
  await registerRateLimits(app, ctx);
  await registerRoutes(app, ctx);
  app.get("/openapi.json", { schema: { hide: true } }, async () => app.swagger());
  return app;
}

/** The Fastify instance with every bound of a connection and a request, the logger and the validators. */
function createFastify(ctx: ServiceContext, options: AppOptions): App {
  const loggerOption =
    options.logger === undefined || options.logger === true
      ? { level: ctx.config.logLevel, redact: { paths: REDACTED, censor: "[redacted]" } }
      : options.logger;
  return Fastify({
    ...(typeof loggerOption === "object" && "child" in loggerOption
      ? { loggerInstance: loggerOption }
      : { logger: loggerOption }),
    bodyLimit: BODY_LIMIT_BYTES,
    ...(options.pluginTimeoutMs === undefined ? {} : { pluginTimeout: options.pluginTimeoutMs }),
    // request.ip (and so every per-address limit) believes X-Forwarded-For only from these proxies.
    trustProxy: ctx.config.trustProxy.length > 0 ? ctx.config.trustProxy : false,
    // Every connection is bounded in time (product §17): a request (a slow body included) is cut off
    // with 408 after requestTimeout, idle sockets after connectionTimeout.
    requestTimeout: ctx.config.requestTimeoutMs,
    connectionTimeout: ctx.config.connectionTimeoutMs,
    keepAliveTimeout: ctx.config.keepAliveTimeoutMs,
    http: {
      headersTimeout: ctx.config.headersTimeoutMs,
      // Node checks the request and header deadlines on this interval (30 s by default), which
      // would let a short timeout run up to 30 s late.
      connectionsCheckingInterval: checkingIntervalMs(ctx.config),
    },
    genReqId: (req) => {
      const given = req.headers["x-request-id"];
      return typeof given === "string" && /^[\w.-]{1,100}$/.test(given) ? given : randomUUID();
    },
    requestIdHeader: false,
    childLoggerFactory: lazyRequestLogger,
    return503OnClosing: true,
    frameworkErrors,
    ajv: { customOptions: AJV_OPTIONS },
    schemaController: validatorsByPart(),
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: 500 },
  }).withTypeProvider<TypeBoxTypeProvider>() as unknown as App;
}

/** Hooks every request passes, in order, before any route: closing, durability, strict input, route list, metrics, problems. */
function addRequestHooks(app: App, ctx: ServiceContext): void {
  // While shutting down, answers close their connection so keep-alive clients do not hold the exit up.
  let closing = false;
  app.addHook("preClose", async () => {
    closing = true;
  });
  // Callback-style hooks (here and below): an async hook costs every request a promise and a tick.
  app.addHook("onSend", (request, reply, payload, done) => {
    reply.header("x-request-id", request.id);
    if (closing) reply.header("connection", "close");
    // No answer reports state that a power loss could still take back (SQLite: the WAL fsync).
    // A 5xx reports nothing stored, and must go out even when the fsync itself failed.
    const durable = reply.statusCode >= 500 ? null : ctx.store.durable();
    if (durable === null) done(null, payload);
    else
      durable.then(
        () => done(null, payload),
        (error: Error) => done(error),
      );
  });

  acceptStrictJsonOnly(app);
  // Before every other hook: a repeated header the service reads is refused, never half-read.
  app.addHook("onRequest", refuseRepeatedHeaders);
  // Then query strings: NUL or invalid UTF-8 is refused before a route or its authentication reads one.
  app.addHook("onRequest", refuseInvalidQueryText);

  // Every route, so tests can hold the OpenAPI document to covering all of them.
  const routes: RegisteredRoute[] = [];
  app.addHook("onRoute", (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      if (method !== "HEAD") routes.push({ method, url: route.url, hidden: route.schema?.hide === true });
    }
  });
  app.decorate("registeredRoutes", routes);

  // Before the 404 handler and every route, so that its timing hook sees them all.
  registerMetricsHook(app, ctx);
  registerProblemHandlers(app);
  // Path parameters obey the same text rules as bodies, before any route looks them up.
  app.addHook("preValidation", (request, _reply, done) => {
    const params = request.params as Record<string, unknown> | undefined;
    for (const value of Object.values(params ?? {})) {
      if (typeof value === "string" && !acceptableText(value)) {
        done(new Problem("invalid_text", "Path parameters must be well-formed Unicode without NUL characters."));
        return;
      }
    }
    done();
  });
  app.addSchema(ProblemSchema);
}

/** The OpenAPI document and its viewer. */
async function registerDocs(app: App, ctx: ServiceContext): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "Merchant payment service",
        version: INTERFACE_VERSION,
        // As the SDK's and the CLI's package.json say: no licence is granted.
        license: { name: "UNLICENSED (proprietary: no licence is granted)", identifier: "LicenseRef-Proprietary" },
        description:
          "Public merchant API (`/public/v1`), operator API (`/admin/v1`) and sandbox API (`/sandbox/v1`). Errors are RFC 9457 problem details with a stable `code`.",
      },
      servers: [{ url: ctx.config.publicBaseUrl }],
      components: {
        securitySchemes: {
          apiKey: { type: "apiKey", in: "header", name: "x-api-key" },
          adminToken: { type: "http", scheme: "bearer" },
          dashboardSession: { type: "apiKey", in: "cookie", name: "dashboard_session" },
        },
      },
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (json.$id as string) ?? `def-${i}` },
  });
  await app.register(swaggerUi, { routePrefix: "/docs", staticCSP: true });
}

async function registerRateLimits(app: App, ctx: ServiceContext): Promise<void> {
  // Registered always: the per-address limits below use its store even when the per-key limit is off.
  await app.register(rateLimit, {
    global: ctx.config.rateLimitPerMinute > 0,
    max: ctx.config.rateLimitPerMinute,
    timeWindow: 60_000,
    // Only merchant traffic is limited, per API key; the key hook runs before this one.
    allowList: (request) => request.apiKeyOwner === undefined,
    keyGenerator: (request) => request.apiKeyOwner?.apiKeyId ?? request.ip,
    errorResponseBuilder: () => new Problem("rate_limited", "Too many requests for this API key; retry later."),
  });
  app.decorate("adminAddressLimit", addressLimit(app, ctx.config.adminRateLimitPerMinute));
  registerUnauthenticatedLimits(app, ctx.config);
}

/** Every surface's routes, in the order the OpenAPI document lists them. */
async function registerRoutes(app: App, ctx: ServiceContext): Promise<void> {
  registerOperationalRoutes(app, ctx);
  registerMetricsRoute(app, ctx);
  registerPublicRoutes(app, ctx);
  registerAdminRoutes(app, ctx);
  registerSandboxRoutes(app, ctx);
  registerDashboardApi(app, ctx);
  registerDashboardPages(app);
  registerPayPage(app, ctx, SANDBOX_PREFIX);
  registerRefundClaimPage(app, ctx);
  registerPaymentLinkPage(app, ctx);
  registerSubscriptionPage(app, ctx);
  registerDepositAddressPage(app, ctx);
  await registerStripeWebhook(app, ctx);
}
