// Headless Chromium for the web tests: Debian's chromium driven by playwright-core, with the flags CI needs.
import { mkdirSync } from "node:fs";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll } from "vitest";
import { chromiumPath } from "../support/chromium.ts";
import { lateBound } from "../support/fixture.ts";
import { startTestServer, type TestServer, type TestServerOptions } from "../support/server.ts";

export const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath(), args: CHROMIUM_ARGS });
}

/** UPDATE_SCREENSHOTS=1: the dashboard tests write their pictures to docs/screenshots/dashboard. */
export const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === "1";
export const SHOT_DIR = "docs/screenshots/dashboard";

/**
 * The dashboard's set-up for a whole file: a server and a Chromium started in `beforeAll`, both
 * closed in `afterAll`. The dashboard's assets are built once per run by the global setup
 * (test/support/buildPackages.ts), never here: a build empties dist/web/dashboard, and files run
 * side by side, so a build in one file blanked the page another file was loading.
 */
export function useDashboardBrowser(options: TestServerOptions = {}): { server: TestServer; browser: Browser } {
  let server: TestServer | undefined;
  let browser: Browser | undefined;
  beforeAll(async () => {
    server = await startTestServer(options);
    browser = await launchChromium();
    if (SCREENSHOTS) mkdirSync(SHOT_DIR, { recursive: true });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });
  return { server: lateBound("the test server", () => server), browser: lateBound("Chromium", () => browser) };
}

/** The page at 1280 px wide, and again at 390 px (phone), when screenshots are asked for. */
export async function shots(page: Page, name: string): Promise<void> {
  if (!SCREENSHOTS) return;
  await page.screenshot({ path: `${SHOT_DIR}/${name}.png`, fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: `${SHOT_DIR}/${name}-mobile.png`, fullPage: true });
  await page.setViewportSize({ width: 1280, height: 800 });
}
