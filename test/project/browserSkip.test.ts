// Without a browser `npm test` still passes: the browser test files are skipped and named, and REQUIRE_BROWSER=1 (CI) fails instead.
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { browserTestFiles } from "../support/chromium.ts";

/** `vitest list` of the web project with the given environment (no build: the list only names files). */
function listWeb(env: Record<string, string>): { status: number | null; output: string } {
  const result = spawnSync("npx", ["vitest", "list", "--project", "web", "--filesOnly"], {
    env: { ...process.env, PAYMENTS_TEST_ASSETS_BUILT: "1", ...env },
    encoding: "utf8",
    timeout: 180_000,
  });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

describe("browser tests without a browser", () => {
  it("finds the files that launch Chromium", () => {
    expect(browserTestFiles("test/web")).toEqual([
      "test/web/accountSwitcher.test.ts",
      "test/web/cardCheckout.test.ts",
      "test/web/claimPage.test.ts",
      "test/web/dashboard.test.ts",
      "test/web/dashboardDepositAddresses.test.ts",
      "test/web/dashboardMoney.test.ts",
      "test/web/dashboardNetworks.test.ts",
      "test/web/dashboardOverview.test.ts",
      "test/web/dashboardSubscriptions.test.ts",
      "test/web/depositAddressPage.test.ts",
      "test/web/linksAndClaims.test.ts",
      "test/web/payPage.test.ts",
      "test/web/payWithWallet.test.ts",
      "test/web/paymentLinkPage.test.ts",
      "test/web/payoutApprovals.test.ts",
      "test/web/screenshots.test.ts",
      "test/web/subscriptionPage.test.ts",
    ]);
  });

  it("skips them loudly, naming each, and keeps the others", () => {
    // CI exports REQUIRE_BROWSER=1 for the whole run: this case is a machine without that requirement.
    const { status, output } = listWeb({ CHROMIUM_PATH: "/nonexistent/chromium", REQUIRE_BROWSER: "" });
    expect(status).toBe(0);
    expect(output).toContain("No Chromium at /nonexistent/chromium");
    for (const file of browserTestFiles("test/web")) {
      expect(output).toContain(file);
      expect(output).not.toContain(`[web] ${file}`);
    }
    expect(output).toContain("[web] test/web/weight.test.ts");
  }, 200_000);

  it("fails instead when REQUIRE_BROWSER=1", () => {
    const { status, output } = listWeb({ CHROMIUM_PATH: "/nonexistent/chromium", REQUIRE_BROWSER: "1" });
    expect(status).not.toBe(0);
    expect(output).toContain("REQUIRE_BROWSER=1 but no Chromium is at /nonexistent/chromium");
  }, 200_000);
});
