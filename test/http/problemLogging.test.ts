// What a route's failure logs: the service's own error with its stack; a 503 refusal it answered on purpose (the node or the signer down) one warn line with its code.
import Fastify, { type FastifyInstance } from "fastify";
import pino from "pino";
import { expect, it } from "vitest";
import { Problem } from "../../src/http/errorCodes.ts";
import { registerProblemHandlers } from "../../src/http/problem.ts";

it("logs a dependency's 503 at warn with its code and no stack, and an unexpected error at error with it", async () => {
  const lines: Record<string, any>[] = [];
  const logger = pino({ level: "info" }, { write: (line: string) => lines.push(JSON.parse(line)) });
  const app = Fastify({ loggerInstance: logger, disableRequestLogging: true });
  registerProblemHandlers(app as unknown as FastifyInstance);
  app.get("/refused", async () => {
    throw new Problem("node_unavailable", "The node did not answer; nothing was sent. Try again.");
  });
  app.get("/broken", async () => {
    throw new Error("boom");
  });
  try {
    const refused = await app.inject({ method: "GET", url: "/refused" });
    const broken = await app.inject({ method: "GET", url: "/broken" });
    expect([refused.statusCode, refused.json().code, broken.statusCode, broken.json().code]).toEqual([
      503,
      "node_unavailable",
      500,
      "internal_error",
    ]);
  } finally {
    await app.close();
  }
  const [warn, error] = lines;
  expect(lines).toHaveLength(2);
  expect(warn).toMatchObject({
    level: 40,
    msg: "request refused: a dependency is unavailable",
    code: "node_unavailable",
    detail: "The node did not answer; nothing was sent. Try again.",
  });
  expect(warn?.err).toBeUndefined();
  expect(error).toMatchObject({ level: 50, msg: "request failed", err: { message: "boom" } });
  expect(error?.err.stack).toContain("boom");
});
