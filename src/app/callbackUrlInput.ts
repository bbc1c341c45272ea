// The one check of a callback URL a merchant or operator gives (an invoice's callbackUrl, a merchant's default callback URL): a 400 refusal when refused.
import type { CallbackUrlError } from "../domain/callbackUrl.ts";
import type { ServiceMode } from "../domain/serviceMode.ts";
import { checkCallbackUrl } from "./callbackDestination.ts";
import type { Refusal } from "./refusal.ts";

/**
 * The refusal of a callback URL by the rules deliveries apply (docs/callbacks.md, safety rules;
 * live mode refuses loopback and private addresses), or null when it is allowed. Resolving the host
 * is network I/O: call it before opening a transaction. `pointer` names the field (`/callbackUrl`).
 */
export async function callbackUrlRefusal(
  url: string,
  mode: ServiceMode,
  pointer: string,
): Promise<Refusal<CallbackUrlError> | null> {
  const checked = await checkCallbackUrl(url, mode);
  if (checked.ok) return null;
  const detail = checked.detail ?? "This callback URL is not allowed.";
  return { code: checked.error, detail, pointer, fieldDetail: checked.detail ?? "is not allowed" };
}
