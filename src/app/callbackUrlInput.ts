// The one check of a callback URL a merchant or operator gives (an invoice's callbackUrl, a merchant's default callback URL): a 400 problem when refused.
import type { ServiceMode } from "../domain/serviceMode.ts";
import { checkCallbackUrl } from "./callbackDestination.ts";
import { Problem } from "./problem.ts";

/**
 * Parses and checks a callback URL by the rules deliveries apply (docs/callbacks.md, safety rules;
 * live mode refuses loopback and private addresses). Resolving the host is network I/O: call it
 * before opening a transaction. `pointer` names the field in the problem (`/callbackUrl`).
 */
export async function requireAllowedCallbackUrl(url: string, mode: ServiceMode, pointer: string): Promise<void> {
  const checked = await checkCallbackUrl(url, mode);
  if (!checked.ok) {
    throw new Problem(checked.error, checked.detail ?? "This callback URL is not allowed.", [
      { pointer, detail: checked.detail ?? "is not allowed" },
    ]);
  }
}
