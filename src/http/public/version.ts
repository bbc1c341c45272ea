// GetVersion: the interface version as a JSON string.
import { Type } from "typebox";
import { type App, INTERFACE_VERSION } from "../routeHost.ts";

export function registerVersion(app: App): void {
  app.get(
    "/public/v1/version",
    {
      schema: {
        operationId: "GetVersion",
        // Public: no API key (an explicit empty requirement, not a forgotten one).
        security: [],
        tags: ["reference"],
        summary: "The API version, as a JSON string",
        response: { 200: Type.String() },
      },
    },
    async (_request, reply) => reply.type("application/json").send(JSON.stringify(INTERFACE_VERSION)),
  );
}
