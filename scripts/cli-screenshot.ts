// Renders a real `payments` session (merchant, key, invoice) against a sandbox service to docs/cli.png.
import { execFileSync } from "node:child_process";
import { chromium } from "playwright-core";
import { startTestServer } from "../test/support/server.ts";

const server = await startTestServer();
const lines: string[] = [];
const env = {
  PATH: process.env.PATH ?? "",
  PAYMENTS_BASE_URL: server.baseUrl,
  PAYMENTS_ADMIN_TOKEN: server.adminToken,
};
function payments(args: string[], extra: Record<string, string> = {}, shown = args): string {
  const out = execFileSync("packages/cli/bin/payments.js", args, { env: { ...env, ...extra }, encoding: "utf8" });
  lines.push(`$ payments ${shown.join(" ")}`, out.trimEnd(), "");
  return out;
}
try {
  const merchant = payments(["merchants", "create", "--email", "shop@example.com", "--name", "My shop"]);
  const merchantId = /^id\s+(\S+)/m.exec(merchant)![1]!;
  const key = payments(["api-keys", "create", merchantId]);
  const apiKey = /^apiKey\s+(\S+)/m.exec(key)![1]!;
  payments(["invoices", "create", "--currency", "USDT", "--amount", "25", "--order-no", "order-1"], {
    PAYMENTS_API_KEY: apiKey,
  });
  payments(["balances", "get", merchantId]);
} finally {
  await server.close();
}
const escape = (s: string) => s.replaceAll("&", "&amp;").replaceAll("<", "&lt;");
const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
  ],
});
try {
  const page = await browser.newPage({ viewport: { width: 980, height: 400 } });
  await page.setContent(
    `<body style="margin:0;background:#1e1e1e"><pre style="margin:0;padding:16px;color:#ddd;font:13px/1.35 monospace">${escape(lines.join("\n"))}</pre></body>`,
  );
  await page.screenshot({ path: "docs/cli.png", fullPage: true });
} finally {
  await browser.close();
}
process.stdout.write("wrote docs/cli.png\n");
