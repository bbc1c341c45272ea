// Fixtures for signed-operation tests: a funded merchant with a withdrawal method, balances and ledger checks.
import { randomBytes } from "node:crypto";
import { expect } from "vitest";
import { auditLedger } from "../../src/store/ledger.ts";
import { admin, createMerchant, type TestServer } from "./server.ts";
import { type SignedCall, type SignedCallOptions, signedCall } from "./signing.ts";

export interface FundedMerchant {
  id: string;
  apiKey: string;
  secretKey: string;
  methodId: number;
}

/** A merchant with `funds` (a monetary string) of `currency` and one withdrawal method in it. */
export async function fundedMerchant(server: TestServer, funds = "1000", currency = "USDT"): Promise<FundedMerchant> {
  const m = await createMerchant(server);
  if (funds !== "0") {
    const adjusted = await admin(server, "POST", `/merchants/${m.id}/balance-adjustments`, {
      currency,
      amount: funds,
      memo: "test funds",
    });
    if (adjusted.status !== 200) throw new Error(`fund: ${adjusted.status} ${adjusted.text}`);
  }
  const method = await admin(server, "POST", `/merchants/${m.id}/withdrawal-methods`, {
    currency,
    // A well-formed EVM address (20 random bytes): live mode refuses anything else.
    address: `0x${randomBytes(20).toString("hex")}`,
  });
  if (method.status !== 200) throw new Error(`method: ${method.status} ${method.text}`);
  return { ...m, methodId: method.body.id };
}

export async function balanceOf(server: TestServer, merchantId: string, currency = "USDT"): Promise<string> {
  const balances = await admin<{ currency: string; available: string }[]>(
    server,
    "GET",
    `/merchants/${merchantId}/balances`,
  );
  return balances.body.find((b) => b.currency === currency)?.available ?? "missing";
}

/** Signs and sends CreateWithdrawal for `merchant` with `body` (defaults: 10 of the method's currency). */
export function withdraw(
  server: TestServer,
  merchant: FundedMerchant,
  body: Record<string, unknown> = {},
  options: Partial<SignedCallOptions> = {},
): Promise<SignedCall> {
  return signedCall(server.baseUrl, {
    apiKey: merchant.apiKey,
    secret: merchant.secretKey,
    body: { currency: "USDT", amount: "10", withdrawalMethodId: merchant.methodId, ...body },
    ...options,
  });
}

/** Every balance change was a balanced movement: sums zero per currency, cached balances agree, none negative. */
export async function expectLedgerBalanced(server: TestServer): Promise<void> {
  const audit = await auditLedger(server.ctx.store);
  for (const [currency, sum] of audit.sumsByCurrency) expect(sum, `ledger sum in ${currency}`).toBe(0n);
  expect(audit.mismatchedBalances).toEqual([]);
  expect(audit.negativeMerchantBalances).toEqual([]);
}

/** How many movements of a cause id and kind the ledger holds. */
export async function movementCount(server: TestServer, causeId: string, kind: string): Promise<number> {
  const rows = await server.ctx.store.db
    .selectFrom("ledger_movements")
    .select("id")
    .where("cause_id", "=", causeId)
    .where("kind", "=", kind)
    .execute();
  return rows.length;
}

/** The payout worker loop of a test server (its loops only run when told to). */
export function payoutWorker(server: TestServer) {
  const loop = server.workers.loops.payouts;
  if (!loop) throw new Error("the payouts loop is not registered");
  return loop;
}
