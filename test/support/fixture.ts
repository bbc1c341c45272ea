// The shared set-up of a test file: one server started before its tests and closed after them, instead of the same hooks copied into every file.
import { afterAll, beforeAll } from "vitest";
import { startTestServer, type TestServer, type TestServerOptions } from "./server.ts";

/**
 * A deferred value: the object answered at collection time stands for what `beforeAll` makes,
 * read through it when a test (or a later hook) runs. Reading it before then is a test bug.
 */
export function lateBound<T extends object>(what: string, current: () => T | undefined): T {
  const target = (): T => {
    const value = current();
    if (value === undefined) throw new Error(`${what} is read before its beforeAll ran`);
    return value;
  };
  return new Proxy({} as T, {
    get: (_, key) => {
      // Methods run on the value itself, so that classes with private fields (a browser) work through it.
      const value = target();
      const field = Reflect.get(value, key);
      return typeof field === "function" ? field.bind(value) : field;
    },
    set: (_, key, value) => Reflect.set(target(), key, value),
    has: (_, key) => Reflect.has(target(), key),
    ownKeys: () => Reflect.ownKeys(target()),
    getOwnPropertyDescriptor: (_, key) => {
      const descriptor = Reflect.getOwnPropertyDescriptor(target(), key);
      return descriptor === undefined ? undefined : { ...descriptor, configurable: true };
    },
  });
}

/**
 * A test server for the whole file: started in `beforeAll`, closed in `afterAll`. Hooks the file
 * registers after this call run after the start and before the close.
 */
export function useTestServer(options: TestServerOptions = {}): TestServer {
  let server: TestServer | undefined;
  beforeAll(async () => {
    server = await startTestServer(options);
  });
  afterAll(async () => {
    await server?.close();
  });
  return lateBound("the test server", () => server);
}
