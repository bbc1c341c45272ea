// Builds the payer's page assets once before the browser tests, as `npm start` does in prestart.
import { execFileSync } from "node:child_process";

export default function setup(): void {
  execFileSync("npx", ["vite", "build", "--config", "web/pay/vite.config.ts"], { stdio: "inherit" });
}
