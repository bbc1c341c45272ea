// Paying with a wallet's rules (product §28): what the payer's page offers to sign is exactly what the service verifies, the window check, and the authorization's state table.
import fc from "fast-check";
import { toHex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { signatureRecovers } from "../../src/chain/walletAuthorizations.ts";
import {
  type CatalogAuthorization,
  checkWindow,
  MIN_WINDOW_SECONDS,
  mayMoveAuthorization,
  typedDataFor,
  WALLET_AUTHORIZATION_STATES,
  WALLET_AUTHORIZATION_TRANSITIONS,
} from "../../src/domain/walletAuthorization.ts";

const key = (bytes: Uint8Array) => toHex(bytes);
const address = fc.uint8Array({ minLength: 20, maxLength: 20 }).map((b) => toHex(b));

const terms = fc.record({
  chainId: fc.integer({ min: 1, max: 2 ** 31 }),
  token: address,
  hotWallet: address,
  value: fc.bigInt({ min: 1n, max: 2n ** 128n }),
  validBefore: fc.bigInt({ min: 1n, max: 2n ** 40n }),
  invoiceId: fc.uuid(),
});

const kinds: fc.Arbitrary<CatalogAuthorization> = fc.oneof(
  fc.record({
    kind: fc.constant("eip3009" as const),
    name: fc.string({ minLength: 1 }),
    version: fc.string({ minLength: 1 }),
  }),
  fc.constant({ kind: "permit2" as const }),
);

describe("what the payer signs", () => {
  it("is what the service verifies: the status's typed data, signed as a wallet signs it, recovers the payer; another amount does not", async () => {
    await fc.assert(
      fc.asyncProperty(
        kinds,
        terms,
        fc.uint8Array({ minLength: 32, maxLength: 32 }).filter((b) => b.some((x) => x !== 0)),
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        async (authorization, t, secret, nonceBytes) => {
          const account = privateKeyToAccount(key(secret));
          const offered = typedDataFor(authorization, t);
          const nonce = authorization.kind === "eip3009" ? toHex(nonceBytes) : BigInt(toHex(nonceBytes)).toString();
          const message = { ...offered.typedData.message, from: account.address, nonce };
          const { EIP712Domain: _domain, ...types } = offered.typedData.types;
          const signature = await account.signTypedData({ ...offered.typedData, types, message } as never);
          const validBefore = authorization.kind === "eip3009" ? t.validBefore : t.validBefore;
          const signed = {
            kind: authorization.kind,
            from: account.address,
            signature,
            nonce,
            validAfter: 0n,
            validBefore,
          };
          expect(await signatureRecovers(authorization, t, signed)).toBe(true);
          expect(await signatureRecovers(authorization, { ...t, value: t.value + 1n }, signed)).toBe(false);
        },
      ),
      { numRuns: 40 },
    );
  });
});

describe("the window", () => {
  const offered = { validBefore: 10_000n };
  it("is open now, closes by the invoice's expiry, and leaves time to be mined", () => {
    expect(checkWindow({ validAfter: 0n, validBefore: 10_000n }, offered, 1_000n).ok).toBe(true);
    expect(checkWindow({ validAfter: 1_000n, validBefore: 10_000n }, offered, 1_000n).ok).toBe(false);
    expect(checkWindow({ validAfter: 0n, validBefore: 10_001n }, offered, 1_000n).ok).toBe(false);
    expect(checkWindow({ validAfter: 0n, validBefore: 1_000n + MIN_WINDOW_SECONDS - 1n }, offered, 1_000n).ok).toBe(
      false,
    );
  });

  it("refuses with authorization_window whatever fails", () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 20_000n }),
        fc.bigInt({ min: 0n, max: 20_000n }),
        fc.bigInt({ min: 0n, max: 20_000n }),
        (after, before, now) => {
          const checked = checkWindow({ validAfter: after, validBefore: before }, offered, now);
          const open = after < now && before <= offered.validBefore && before >= now + MIN_WINDOW_SECONDS;
          expect(checked.ok).toBe(open);
          if (!checked.ok) expect(checked.error).toBe("authorization_window");
        },
      ),
    );
  });
});

describe("an authorization's states", () => {
  it("are a table with a reason per move, which the store's writes read", () => {
    const pairs = WALLET_AUTHORIZATION_TRANSITIONS.map((t) => `${t.from}>${t.to}`);
    expect(new Set(pairs).size).toBe(pairs.length);
    for (const t of WALLET_AUTHORIZATION_TRANSITIONS) expect(t.why.length).toBeGreaterThan(20);
    for (const from of WALLET_AUTHORIZATION_STATES) {
      for (const to of WALLET_AUTHORIZATION_STATES) {
        expect(mayMoveAuthorization(from, to)).toBe(pairs.includes(`${from}>${to}`));
      }
    }
    // Settled, failed and expired are final: nothing leaves them.
    for (const end of ["settled", "failed", "expired"] as const) {
      expect(WALLET_AUTHORIZATION_TRANSITIONS.filter((t) => t.from === end)).toEqual([]);
    }
  });
});
