// Shapes of scoped API keys (product §31) shared by the operator API and the dashboard: what a key is made with and how it is listed.
import { Type } from "typebox";
import { parseRange } from "../domain/addressRanges.ts";
import { API_KEY_SCOPES } from "../domain/apiKeyScopes.ts";
import type { ApiKeyLimits } from "../store/merchants.ts";
import { Problem } from "./problem.ts";
import { Nullable } from "./schemas.ts";

const Scope = Type.Union(
  API_KEY_SCOPES.map((scope) => Type.Literal(scope)),
  { description: "`read` lets the key make every GET; the others one kind of operation (docs/api-keys.md)" },
);

/** Optional fields of a new key: without them a full key, usable from anywhere. */
export const ApiKeyLimitFields = {
  scopes: Type.Optional(
    Type.Array(Scope, {
      minItems: 1,
      maxItems: API_KEY_SCOPES.length,
      uniqueItems: true,
      description: "What the key may do; absent: everything (a full key)",
    }),
  ),
  allowedAddresses: Type.Optional(
    Type.Array(Type.String({ minLength: 1, maxLength: 50 }), {
      minItems: 1,
      maxItems: 50,
      description: "Client address ranges (CIDR, IPv4 or IPv6) the key may be used from; absent: anywhere",
    }),
  ),
};

export const ApiKeyItem = Type.Object(
  {
    id: Type.String(),
    prefix: Type.String({ description: "The key's first characters, to recognise it" }),
    legacy: Type.Boolean(),
    createdAt: Type.String(),
    lastUsedAt: Nullable(Type.String({ description: "To the minute" })),
    lastUsedFrom: Nullable(Type.String({ description: "The client address of that use" })),
    revokedAt: Nullable(Type.String()),
    scopes: Nullable(Type.Array(Type.String(), { description: "null: a full key" })),
    allowedAddresses: Nullable(Type.Array(Type.String(), { description: "null: from anywhere" })),
  },
  { additionalProperties: false },
);

/** A new key's bounds from its request body; a range that is not CIDR is 400 `invalid_address_range`. */
export function apiKeyLimits(body: { scopes?: readonly string[]; allowedAddresses?: readonly string[] }): ApiKeyLimits {
  const ranges = body.allowedAddresses?.map((text, index) => {
    const parsed = parseRange(text);
    if (!parsed.ok) {
      throw new Problem("invalid_address_range", parsed.detail, [
        { pointer: `/allowedAddresses/${index}`, detail: parsed.detail },
      ]);
    }
    return text.trim();
  });
  return {
    scopes: (body.scopes as ApiKeyLimits["scopes"]) ?? null,
    allowedAddresses: ranges ?? null,
  };
}
