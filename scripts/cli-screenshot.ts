// Renders a real `payments` session (merchant, key, invoice) against a sandbox service to docs/cli.png.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { chromium } from "playwright-core";
import { startTestServer } from "../test/support/server.ts";

const server = await startTestServer();
const lines: string[] = [];
const env = {
  PATH: process.env.PATH ?? "",
  PAYMENTS_BASE_URL: server.baseUrl,
  PAYMENTS_ADMIN_TOKEN: server.adminToken,
};
// Asynchronous: the service runs in this process and must keep answering while the CLI waits.
async function payments(args: string[], extra: Record<string, string> = {}, shown = args): Promise<string> {
  const { stdout: out } = await promisify(execFile)("packages/cli/bin/payments.js", args, {
    env: { ...env, ...extra },
  });
  lines.push(`$ payments ${shown.join(" ")}`, out.trimEnd(), "");
  return out;
}
try {
  const merchant = await payments(["merchants", "create", "--email", "shop@example.com", "--name", "My shop"]);
  const merchantId = /^id\s+(\S+)/m.exec(merchant)![1]!;
  const key = await payments(["api-keys", "create", merchantId]);
  const apiKey = /^apiKey\s+(\S+)/m.exec(key)![1]!;
  await payments(["invoices", "create", "--currency", "USDT", "--amount", "25", "--order-no", "order-1"], {
    PAYMENTS_API_KEY: apiKey,
  });
  await payments(["balances", "get", merchantId]);
} finally {
  await server.close();
}
const escapeHtml = (s: string) => s.replaceAll("&", "&amp;").replaceAll("<", "&lt;");
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
    `<body style="margin:0;background:#1e1e1e"><pre style="margin:0;padding:16px;color:#ddd;font:13px/1.35 monospace">${escapeHtml(lines.join("\n"))}</pre></body>`,
  );
  await page.screenshot({ path: "docs/cli.png", fullPage: true });
} finally {
  await browser.close();
}
process.stdout.write("wrote docs/cli.png\n");
