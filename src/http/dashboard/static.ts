// Serves the dashboard's built front end (web/dashboard, built into dist/web/dashboard) at /dashboard with a strict CSP.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { extname, join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { Problem } from "../problem.ts";
import type { App } from "../routeHost.ts";
import { DASHBOARD_PREFIX } from "./index.ts";

/** The same directory from src/http/dashboard (tsx) and dist/http/dashboard (built). */
export const DASHBOARD_BUILD_DIR = fileURLToPath(new URL("../../../dist/web/dashboard", import.meta.url));

/** Only files from this origin; no inline script or style; never framed. The QR code is an SVG data: image. */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
};

/** Every built file, read once at start: the build is a few small files, bounded here all the same. */
function readBuild(dir: string): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  const walk = (at: string, depth: number) => {
    if (depth > 5) return;
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      if (statSync(path).isDirectory()) walk(path, depth + 1);
      else if (files.size < 500) files.set(relative(dir, path).split(sep).join("/"), readFileSync(path));
    }
  };
  walk(dir, 0);
  return files;
}

export function registerDashboardPages(app: App, dir = DASHBOARD_BUILD_DIR): void {
  const files = existsSync(dir) ? readBuild(dir) : new Map<string, Buffer>();
  const index = files.get("index.html");
  const send = (path: string, reply: import("fastify").FastifyReply) => {
    reply.header("content-security-policy", DASHBOARD_CSP);
    reply.header("x-content-type-options", "nosniff");
    reply.header("referrer-policy", "no-referrer");
    reply.header("x-frame-options", "DENY");
    const file = files.get(path);
    if (file !== undefined && path !== "index.html") {
      reply.header("cache-control", path.startsWith("assets/") ? "public, max-age=31536000, immutable" : "no-cache");
      return reply.type(TYPES[extname(path)] ?? "application/octet-stream").send(file);
    }
    if (index === undefined) {
      return reply
        .code(503)
        .type("text/plain; charset=utf-8")
        .send("The dashboard is not built: run `npm run build:web` (npm start does it).");
    }
    reply.header("cache-control", "no-cache");
    return reply.type("text/html; charset=utf-8").send(index);
  };
  app.get("/dashboard", { schema: { hide: true } }, (_request, reply) => send("index.html", reply));
  app.get("/dashboard/*", { schema: { hide: true } }, (request, reply) => {
    const path = (request.params as { "*": string })["*"];
    // An unknown API route is the API's 404, not the application's page.
    if (`/dashboard/${path}`.startsWith(`${DASHBOARD_PREFIX}/`)) throw new Problem("not_found", "No such route.");
    // Anything that is not a built file is a page of the application (client-side routes).
    return send(path, reply);
  });
}
