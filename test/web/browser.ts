// Headless Chromium for the web tests: Debian's chromium driven by playwright-core, with the flags CI needs.
import { type Browser, chromium } from "playwright-core";
import { chromiumPath } from "../support/chromium.ts";

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
