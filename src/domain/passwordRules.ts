// Rules a new dashboard password meets (product §18): long enough, not only whitespace, not a common password.
import { PASSWORD_MIN_LENGTH } from "./dashboardRoles.ts";
import { err, ok, type Result } from "./result.ts";

export type PasswordRefusal = "password_too_short" | "password_blank" | "password_too_common";

/**
 * Below this zxcvbn score a password is refused as common: score 3 means an attacker needs about
 * 10^8 guesses or more, which rules out the common-password list (about 30 000 entries), its
 * combinations with years and digits, repeats, sequences and keyboard walks, and still admits a
 * three-word passphrase.
 */
export const MIN_PASSWORD_SCORE = 3;

interface Estimator {
  check(password: string): { score: number };
}

let estimator: Promise<Estimator> | null = null;

/** zxcvbn with its common dictionary (offline, shipped in the package), loaded at first use: it takes ~0.4 s and some MiB. */
function zxcvbn(): Promise<Estimator> {
  estimator ??= (async () => {
    const [{ ZxcvbnFactory }, common] = await Promise.all([
      import("@zxcvbn-ts/core"),
      import("@zxcvbn-ts/language-common"),
    ]);
    return new ZxcvbnFactory({ dictionary: { ...common.dictionary }, graphs: common.adjacencyGraphs });
  })();
  return estimator;
}

/** Checks a password a person chose; the refusal names the first rule it breaks. */
export async function checkPassword(password: string): Promise<Result<true, PasswordRefusal>> {
  if ([...password].length < PASSWORD_MIN_LENGTH) return err("password_too_short");
  if (password.trim() === "") return err("password_blank");
  // zxcvbn scores the first 256 characters; a longer password is not common.
  const { score } = (await zxcvbn()).check(password.slice(0, 256));
  if (score < MIN_PASSWORD_SCORE) return err("password_too_common");
  return ok(true);
}
