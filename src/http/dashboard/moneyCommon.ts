// What the dashboard's money routes share (product §14): the request id a form carries, explorer links.
import { Type } from "typebox";
import type { IdempotentRequest } from "../../app/performOnce.ts";
import { explorerTxUrl } from "../../domain/networks.ts";
import { bodyHash, canonicalJson, checkRequestId } from "../../domain/signing.ts";
import { explorerUrls } from "../../store/networks.ts";
import type { Tx } from "../../store/store.ts";
import { Problem } from "../problem.ts";

export const tags = ["dashboard"];
export const security = [{ dashboardSession: [] }];

/** The request id a form carries: made once per form (a double click sends the same one), a UUID as the signed API takes. */
export const RequestIdField = Type.String({
  minLength: 36,
  maxLength: 36,
  description: "A UUID made once per form; the same id is the same operation (as x-service-request-id)",
});

/**
 * The request-id record of a dashboard money action: the same records as the signed operations
 * (so an id is one operation across both entrances), under the dashboard route, with the hash of
 * the form's fields (without the request id) deciding whether a repeat is the same request.
 */
export function dashboardRequest(
  merchantId: string,
  route: string,
  requestId: string,
  fields: Record<string, unknown>,
): IdempotentRequest {
  const key = checkRequestId(requestId);
  if (!key.ok)
    throw new Problem("validation_failed", "requestId must be a UUID in 8-4-4-4-12 form.", [
      { pointer: "/requestId", detail: "must be a UUID" },
    ]);
  const canonical = canonicalJson(fields);
  if (!canonical.ok) throw new Problem("malformed_json", canonical.detail ?? "The body is not valid JSON.");
  return { route, merchantId, requestIdSent: requestId, requestKey: key.value, bodyHash: bodyHash(canonical.value) };
}

/**
 * Links of payout transactions on their network's explorer (the network's `explorerUrl`), or null:
 * the networks' templates are read once, for a whole page.
 */
export async function explorerLinks(tx: Tx): Promise<(network: string, txId: string | null) => string | null> {
  const templates = await explorerUrls(tx);
  return (network, txId) => {
    const template = templates.get(network);
    return txId === null || template === undefined ? null : explorerTxUrl(template, txId);
  };
}
