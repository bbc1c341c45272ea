// Builds the payer's page script and style into dist/web/pay (served by src/http/pay.ts): one small file each, no framework.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

const here = fileURLToPath(new URL(".", import.meta.url));

export default defineConfig({
  root: here,
  logLevel: "warn",
  build: {
    outDir: fileURLToPath(new URL("../../dist/web/pay", import.meta.url)),
    emptyOutDir: true,
    target: "es2020",
    cssCodeSplit: false,
    lib: {
      entry: fileURLToPath(new URL("./entry.ts", import.meta.url)),
      formats: ["iife"],
      name: "pay",
      fileName: () => "pay.js",
      cssFileName: "pay",
    },
  },
});
