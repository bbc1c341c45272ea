// `npm run test:production`: the Dockerfile's steps in clean folders (a production install from the registry takes minutes, so not in `npm test`; CI runs it).
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/production/**/*.test.ts"],
    testTimeout: 1_800_000,
    hookTimeout: 1_800_000,
  },
});
