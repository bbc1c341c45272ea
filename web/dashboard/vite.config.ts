// Vite build of the merchant's dashboard: Preact, served by the service at /dashboard from dist/web/dashboard.
import { fileURLToPath } from "node:url";
import preact from "@preact/preset-vite";
import { defineConfig } from "vite";

const root = fileURLToPath(new URL(".", import.meta.url));

export default defineConfig({
  root,
  base: "/dashboard/",
  plugins: [preact()],
  build: {
    outDir: fileURLToPath(new URL("../../dist/web/dashboard", import.meta.url)),
    emptyOutDir: true,
    // No inline scripts or styles: the service's CSP allows only files from its own origin.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
  },
  server: {
    // `npm run dev:web`: the API calls go to the service (npm run dev) on its port.
    proxy: { "/dashboard/v1": process.env.DASHBOARD_API ?? "http://127.0.0.1:3000" },
  },
});
