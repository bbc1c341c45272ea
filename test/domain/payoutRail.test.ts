// The payout rail rule: which rail a payout leaves by, from the configuration and two facts of the payout.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { choosePayoutRail, PAYOUT_RAILS } from "../../src/domain/payout.ts";

describe("choosePayoutRail", () => {
  it("answers the rail that paid such payouts before rails were recorded", () => {
    const live = { mode: "live" as const, chainPayouts: true, onConfiguredNetwork: true, cardRefund: false };
    expect(choosePayoutRail({ ...live, mode: "sandbox" })).toBe("sandbox");
    expect(choosePayoutRail(live)).toBe("evm");
    expect(choosePayoutRail({ ...live, chainPayouts: false })).toBe("operator");
    expect(choosePayoutRail({ ...live, onConfiguredNetwork: false })).toBe("operator");
    expect(choosePayoutRail({ ...live, onConfiguredNetwork: false, cardRefund: true })).toBe("card");
  });

  it("sends everything in the sandbox to the sandbox rail, and nothing live to it", () => {
    fc.assert(
      fc.property(fc.boolean(), fc.boolean(), fc.boolean(), (chainPayouts, onConfiguredNetwork, cardRefund) => {
        const facts = { chainPayouts, onConfiguredNetwork, cardRefund };
        expect(choosePayoutRail({ ...facts, mode: "sandbox" })).toBe("sandbox");
        const live = choosePayoutRail({ ...facts, mode: "live" });
        expect(PAYOUT_RAILS).toContain(live);
        expect(live).not.toBe("sandbox");
        if (live === "evm") expect(chainPayouts && onConfiguredNetwork).toBe(true);
      }),
    );
  });
});
