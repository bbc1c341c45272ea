// request.log stands in for pino's child until a message passes the level: same lines, same bindings.
import Fastify from "fastify";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { lazyRequestLogger } from "../../src/http/requestLogger.ts";

function capture(level: string) {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { logger, lines };
}

describe("lazyRequestLogger", () => {
  it("makes no child for messages below the level, and logs with the request's bindings above it", () => {
    const { logger, lines } = capture("warn");
    let children = 0;
    const counting = Object.assign(Object.create(logger), {
      child: (...args: Parameters<typeof logger.child>) => {
        children += 1;
        return logger.child(...args);
      },
    });
    const log = lazyRequestLogger(counting, { reqId: "r-1" }, {});
    log.info("not shown");
    log.debug({ a: 1 }, "not shown");
    expect(children).toBe(0);
    expect(lines).toEqual([]);

    log.warn({ detail: 7 }, "shown");
    log.error("also shown");
    expect(children).toBe(1);
    expect(lines.map((l) => [l.reqId, l.msg, l.level])).toEqual([
      ["r-1", "shown", 40],
      ["r-1", "also shown", 50],
    ]);
    expect(lines[0]?.detail).toBe(7);
  });

  it("reports the parent's level, and a level set on it applies to that request only", () => {
    const { logger, lines } = capture("warn");
    const log = lazyRequestLogger(logger, { reqId: "r-2" }, {});
    expect(log.level).toBe("warn");
    log.level = "info";
    log.info("now shown");
    expect(logger.level).toBe("warn");
    expect(lines.map((l) => [l.reqId, l.msg])).toEqual([["r-2", "now shown"]]);
  });

  it("gives children that carry the request's bindings too", () => {
    const { logger, lines } = capture("info");
    const log = lazyRequestLogger(logger, { reqId: "r-3" }, {});
    log.child({ part: "x" }).info("from the grandchild");
    expect(lines[0]).toMatchObject({ reqId: "r-3", part: "x", msg: "from the grandchild" });
  });

  it("serves as Fastify's request logger", async () => {
    const { logger, lines } = capture("warn");
    const app = Fastify({ loggerInstance: logger, childLoggerFactory: lazyRequestLogger, genReqId: () => "req-9" });
    app.get("/", async (request) => {
      request.log.info("quiet");
      request.log.warn("loud");
      return { ok: true };
    });
    const response = await app.inject({ method: "GET", url: "/" });
    expect(response.statusCode).toBe(200);
    expect(lines.map((l) => [l.reqId, l.msg])).toEqual([["req-9", "loud"]]);
    await app.close();
  });
});
