// Password rules (product §18): the domain check alone.
import { describe, expect, it } from "vitest";
import { checkPassword } from "../../src/domain/passwordRules.ts";

describe("checkPassword", () => {
  it("refuses short, whitespace-only and common passwords, and admits passphrases", async () => {
    expect(await checkPassword("elevenchars")).toEqual({ ok: false, error: "password_too_short" });
    // Characters, not UTF-16 units: eleven emoji are too short.
    expect(await checkPassword("🔑".repeat(11))).toEqual({ ok: false, error: "password_too_short" });
    expect(await checkPassword(" ".repeat(40))).toEqual({ ok: false, error: "password_blank" });
    for (const common of ["password1234", "letmein12345", "1234567890123", "passwordpassword", "trustno1trustno1"])
      expect(await checkPassword(common)).toEqual({ ok: false, error: "password_too_common" });
    for (const good of ["correct horse battery", "kx9-Rm2q-Lw7z", "a very secret passphrase"])
      expect((await checkPassword(good)).ok, good).toBe(true);
    // Past the 256 characters zxcvbn scores, what it sees decides: a repeat stays refused.
    expect(await checkPassword("ab".repeat(400))).toEqual({ ok: false, error: "password_too_common" });
  });
});
