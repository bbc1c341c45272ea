// Each request's logger (request.log): made only when the request logs something its level lets through.
import type { FastifyBaseLogger } from "fastify";
import type { Bindings, ChildLoggerOptions } from "fastify/types/logger.js";

type Level = "fatal" | "error" | "warn" | "info" | "debug" | "trace";
type LevelCheck = { isLevelEnabled?: (level: string) => boolean };

/**
 * A pino child carrying the request id costs every request an object and its serialized bindings.
 * At `info` (the default) Fastify logs each request's start and end, so every request needs one;
 * at `warn` or above (LOG_LEVEL, as the bench runs) almost no request logs anything. This stands
 * in for the child and makes it the first time a message passes the level; from then on it is it.
 */
class LazyRequestLogger {
  readonly #parent: FastifyBaseLogger;
  readonly #bindings: Bindings;
  readonly #options: ChildLoggerOptions;
  #child: FastifyBaseLogger | undefined;

  constructor(parent: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions) {
    this.#parent = parent;
    this.#bindings = bindings;
    this.#options = options;
  }

  #real(): FastifyBaseLogger {
    this.#child ??= this.#parent.child(this.#bindings, this.#options);
    return this.#child;
  }

  #log(level: Level, args: unknown[]): void {
    if (this.#child === undefined) {
      const enabled = (this.#parent as LevelCheck).isLevelEnabled;
      // A logger that cannot say (not pino): always the real child.
      if (enabled !== undefined && !enabled.call(this.#parent, level)) return;
    }
    (this.#real()[level] as (...a: unknown[]) => void)(...args);
  }

  get level(): string {
    return this.#child?.level ?? this.#parent.level;
  }
  set level(value: string) {
    this.#real().level = value;
  }
  fatal(...args: unknown[]): void {
    this.#log("fatal", args);
  }
  error(...args: unknown[]): void {
    this.#log("error", args);
  }
  warn(...args: unknown[]): void {
    this.#log("warn", args);
  }
  info(...args: unknown[]): void {
    this.#log("info", args);
  }
  debug(...args: unknown[]): void {
    this.#log("debug", args);
  }
  trace(...args: unknown[]): void {
    this.#log("trace", args);
  }
  silent(): void {}
  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#real().child(bindings, options);
  }
}

export function lazyRequestLogger(
  parent: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  // Routes with their own log level would need the level decided per child: they get the real one.
  if (options.level) return parent.child(bindings, options);
  return new LazyRequestLogger(parent, bindings, options) as unknown as FastifyBaseLogger;
}
