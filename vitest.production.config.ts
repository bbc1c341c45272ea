// `npm run test:production`: the Dockerfile's steps in clean folders; a production install compiles better-sqlite3 when no prebuilt binary downloads (26 min on a loaded 2-core machine), so not in `npm test`; CI runs it.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/production/**/*.test.ts"],
    testTimeout: 3_600_000,
    hookTimeout: 3_600_000,
  },
});
