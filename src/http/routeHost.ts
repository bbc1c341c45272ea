// What a route module registers on: the service's Fastify instance type and what app.ts decorates it with; imports no route, so routes never import app.ts.
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyBaseLogger, FastifyInstance } from "fastify";

/** The service's Fastify instance (built by buildApp in app.ts), as every surface's register function takes it. */
export type App = FastifyInstance<
  import("node:http").Server,
  import("node:http").IncomingMessage,
  import("node:http").ServerResponse,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

export interface RegisteredRoute {
  method: string;
  url: string;
  /** Left out of the OpenAPI document on purpose (documentation and static assets). */
  hidden: boolean;
}

declare module "fastify" {
  interface FastifyInstance {
    registeredRoutes: RegisteredRoute[];
  }
}

/** The interface's version: the OpenAPI document's and the public version route's. */
export const INTERFACE_VERSION = "1.0.0";
