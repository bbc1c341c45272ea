// Dashboard money actions (product §14) on both stores: withdrawal methods, withdraw, refunds, lists, the ledger and its CSV, roles, step-up, audit, and a race with the signed API.
import { randomBytes, randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { putNetwork } from "../../src/store/networks.ts";
import { nowIso } from "../../src/store/store.ts";
import { type DashboardClient, invitedUser, PASSWORD } from "../support/dashboard.ts";
import { useTestServer } from "../support/fixture.ts";
import { createInvoice, pay } from "../support/invoices.ts";
import {
  adjust,
  completedInvoice,
  feeFreeMerchant,
  invoiceStatus,
  payoutOutcome,
  type RefundMerchant,
} from "../support/refunds.ts";
import {
  type Answer,
  admin,
  createMerchant,
  expectProblem,
  startTestServer,
  type TestServer,
} from "../support/server.ts";
import {
  balanceOf,
  expectLedgerBalanced,
  type FundedMerchant,
  fundedMerchant,
  movementCount,
  withdraw as signedWithdraw,
} from "../support/withdrawals.ts";

let shop: FundedMerchant;
let owner: DashboardClient;
let secondOwner: DashboardClient;
let developer: DashboardClient;
let viewer: DashboardClient;

/** A USDT monetary string (may start with "-") in minor units, exactly. */
function usdtMinor(text: string): bigint {
  const [whole = "0", fraction = ""] = text.replace(/^-/, "").split(".");
  const minor = BigInt(whole) * 1_000_000n + BigInt(fraction.padEnd(6, "0"));
  return text.startsWith("-") ? -minor : minor;
}

const evmAddress = () => `0x${randomBytes(20).toString("hex")}`;

/** CreateWithdrawal, signed, through the public API: its answer. */
async function withdraw(...args: Parameters<typeof signedWithdraw>) {
  return (await signedWithdraw(...args)).answer;
}

/** A session's step-up (a sign-in counts as one) is over: 6 minutes ago. */
async function expireStepUp(target: TestServer, user: DashboardClient): Promise<void> {
  await target.ctx.store.transaction((tx) =>
    tx.db
      .updateTable("dashboard_sessions")
      .set({ step_up_at: new Date(Date.now() - 6 * 60_000).toISOString() })
      .where("user_id", "=", user.userId)
      .execute(),
  );
}

async function stepUp(user: DashboardClient): Promise<void> {
  const answer = await user.call("POST", "/step-up", { password: PASSWORD });
  expect(answer.status).toBe(200);
}

const server = useTestServer();
beforeAll(async () => {
  shop = await fundedMerchant(server, "1000");
  owner = await invitedUser(server, shop.id, "owner");
  secondOwner = await invitedUser(server, shop.id, "owner");
  developer = await invitedUser(server, shop.id, "developer");
  viewer = await invitedUser(server, shop.id, "viewer");
});

describe("withdrawal methods", () => {
  it("owners add a method after a step-up; the address is checked for its network; everyone reads the list", async () => {
    const body = { currency: "USDT", address: evmAddress(), label: "cold wallet" };
    await expireStepUp(server, owner);
    expectProblem(await owner.call("POST", "/withdrawal-methods", body), 403, "step_up_required");
    await stepUp(developer);
    expectProblem(await developer.call("POST", "/withdrawal-methods", body), 403, "role_forbidden");
    expectProblem(await viewer.call("POST", "/withdrawal-methods", body), 403, "role_forbidden");
    await stepUp(owner);
    expectProblem(await owner.call("POST", "/withdrawal-methods", body, { csrf: null }), 403, "csrf_failed");
    expectProblem(
      await owner.call("POST", "/withdrawal-methods", { ...body, address: "0x1234" }),
      400,
      "invalid_address",
    );
    // Mixed case that is not the EIP-55 checksum of the address.
    const wrongChecksum = `0x${"aB".repeat(20)}`;
    expectProblem(
      await owner.call("POST", "/withdrawal-methods", { ...body, address: wrongChecksum }),
      400,
      "invalid_address",
    );
    expectProblem(
      await owner.call("POST", "/withdrawal-methods", { ...body, currency: "DOGE" }),
      400,
      "unknown_currency",
    );
    const added = await owner.call("POST", "/withdrawal-methods", body);
    expect(added.status).toBe(200);
    expect(added.body).toMatchObject({
      currency: "USDT",
      internalTicker: "USDT_ERC20",
      network: "ethereum",
      label: "cold wallet",
      addedBy: "dashboard",
      disabledAt: null,
    });
    // Sandbox: no cooling-off by default.
    expect(added.body.usableFrom).toBeNull();
    const listed = await viewer.call("GET", "/withdrawal-methods");
    expect(listed.status).toBe(200);
    expect(listed.body.map((m: { id: number }) => m.id)).toEqual([shop.methodId, added.body.id]);
    // Every owner sees the change in the audit log.
    const log = await secondOwner.call("GET", "/audit");
    const entry = log.body.items.find((i: { action: string }) => i.action === "withdrawal_method.add");
    // Stored in its EIP-55 checksummed form.
    expect(added.body.address.toLowerCase()).toBe(body.address);
    expect(entry.target).toContain(`#${added.body.id} USDT ${added.body.address} (cold wallet)`);
    expect(entry.userEmail).toBe(owner.email);
  });

  it("labels and disables a method; a disabled method takes no withdrawal from the API or the dashboard", async () => {
    await stepUp(owner);
    const added = await owner.call("POST", "/withdrawal-methods", { currency: "USDT", address: evmAddress() });
    const id = added.body.id;
    expectProblem(await viewer.call("PATCH", `/withdrawal-methods/${id}`, { label: "x" }), 403, "role_forbidden");
    const labelled = await owner.call("PATCH", `/withdrawal-methods/${id}`, { label: "hot" });
    expect(labelled.body.label).toBe("hot");
    expect((await withdraw(server, shop, { withdrawalMethodId: id, amount: "10" })).status).toBe(200);
    const disabled = await owner.call("POST", `/withdrawal-methods/${id}/disable`);
    expect(disabled.status).toBe(200);
    expect(disabled.body.disabledAt).toMatch(/Z$/);
    expectProblem(await withdraw(server, shop, { withdrawalMethodId: id }), 400, "withdrawal_method_disabled");
    expectProblem(
      await owner.call("POST", "/withdrawals", {
        requestId: randomUUID(),
        currency: "USDT",
        amount: "10",
        withdrawalMethodId: id,
      }),
      400,
      "withdrawal_method_disabled",
    );
    // Another merchant's method is unknown here.
    const other = await fundedMerchant(server, "0");
    expectProblem(
      await owner.call("POST", `/withdrawal-methods/${other.methodId}/disable`),
      404,
      "withdrawal_method_unknown",
    );
    expectProblem(
      await owner.call("PATCH", `/withdrawal-methods/${other.methodId}`, { label: "x" }),
      404,
      "withdrawal_method_unknown",
    );
    const audit = await owner.call("GET", "/audit");
    const actions = audit.body.items.map((i: { action: string }) => i.action);
    expect(actions).toEqual(expect.arrayContaining(["withdrawal_method.label", "withdrawal_method.disable"]));
  });

  it("the operator API lists and disables methods", async () => {
    const m = await fundedMerchant(server, "100");
    const disabled = await admin(server, "POST", `/merchants/${m.id}/withdrawal-methods/${m.methodId}/disable`);
    expect(disabled.status).toBe(200);
    expect(disabled.body).toMatchObject({ id: m.methodId, addedBy: "operator", usableFrom: null });
    const listed = await admin(server, "GET", `/merchants/${m.id}/withdrawal-methods`);
    expect(listed.body[0].disabledAt).toBe(disabled.body.disabledAt);
    expectProblem(await withdraw(server, m), 400, "withdrawal_method_disabled");
    expectProblem(
      await admin(server, "POST", `/merchants/${m.id}/withdrawal-methods/999999/disable`),
      404,
      "withdrawal_method_unknown",
    );
    expectProblem(
      await admin(server, "POST", `/merchants/nope/withdrawal-methods/${m.methodId}/disable`),
      404,
      "merchant_not_found",
    );
  });
});

describe("withdraw from the dashboard", () => {
  it("needs an owner and a step-up; one request id is one withdrawal, whatever the number of clicks", async () => {
    const m = await fundedMerchant(server, "100");
    const o = await invitedUser(server, m.id, "owner");
    const v = await invitedUser(server, m.id, "viewer");
    const form = { requestId: randomUUID(), currency: "USDT", amount: "25", withdrawalMethodId: m.methodId };
    await expireStepUp(server, o);
    expectProblem(await o.call("POST", "/withdrawals", form), 403, "step_up_required");
    await stepUp(v);
    expectProblem(await v.call("POST", "/withdrawals", form), 403, "role_forbidden");
    await stepUp(o);
    const [a, b] = await Promise.all([o.call("POST", "/withdrawals", form), o.call("POST", "/withdrawals", form)]);
    expect(a.status).toBe(200);
    expect(a.body.request).toMatchObject({ id: form.requestId, amount: "25", status: "processing" });
    // The second click is the first's answer (or, while the first still runs, a 409 that changed nothing).
    if (b.status === 200) expect(b.text).toBe(a.text);
    else expectProblem(b, 409, "request_in_progress");
    const again = await o.call("POST", "/withdrawals", form);
    expect(again.text).toBe(a.text);
    expect(await balanceOf(server, m.id)).toBe("75");
    expect(await movementCount(server, form.requestId, "debit")).toBe(1);
    // The same id with other fields is another request: refused, as the signed API refuses it.
    expectProblem(await o.call("POST", "/withdrawals", { ...form, amount: "26" }), 409, "request_id_reused");
    // The id is taken across both entrances.
    expectProblem(await withdraw(server, m, {}, { requestId: form.requestId }), 409, "request_id_reused");
    // The interface's rules, with their own codes.
    const fresh = () => ({ ...form, requestId: randomUUID() });
    expectProblem(await o.call("POST", "/withdrawals", { ...fresh(), amount: "80" }), 400, "insufficient_balance");
    expectProblem(await o.call("POST", "/withdrawals", { ...fresh(), amount: "1" }), 400, "amount_below_minimum");
    expectProblem(
      await o.call("POST", "/withdrawals", { ...fresh(), currency: "ETH" }),
      400,
      "withdrawal_method_currency_mismatch",
    );
    expectProblem(
      await o.call("POST", "/withdrawals", { ...fresh(), withdrawalMethodId: shop.methodId }),
      400,
      "withdrawal_method_not_found",
    );
    expectProblem(
      await o.call("POST", "/withdrawals", { ...fresh(), requestId: "not-a-uuid-not-a-uuid-not-a-uuid-xx" }),
      400,
      "validation_failed",
    );
    // A refused request records nothing: its id stays usable.
    const refused = fresh();
    expectProblem(await o.call("POST", "/withdrawals", { ...refused, amount: "80" }), 400, "insufficient_balance");
    expect((await o.call("POST", "/withdrawals", { ...refused, amount: "10" })).status).toBe(200);
    const audit = await o.call("GET", "/audit");
    expect(audit.body.items.filter((i: { action: string }) => i.action === "withdrawal.create")).toHaveLength(2);
    await expectLedgerBalanced(server);
  });

  it("lists withdrawals with filters and keyset pages; the detail shows the payout; another merchant's is 404", async () => {
    const m = await fundedMerchant(server, "100");
    const o = await invitedUser(server, m.id, "owner");
    const v = await invitedUser(server, m.id, "viewer");
    const ids: string[] = [];
    for (const amount of ["10", "11", "12"]) {
      const sent = await withdraw(server, m, { amount });
      ids.push(sent.body.request.id);
    }
    await payoutOutcome(server, m as RefundMerchant, ids[0] as string, { status: "completed", txId: "0xfeed" });
    const first = await v.call("GET", "/withdrawals?limit=2");
    expect(first.status).toBe(200);
    expect(first.body.data.map((w: { amount: string }) => w.amount)).toEqual(["12", "11"]);
    expect(first.body.has_more).toBe(true);
    const second = await v.call("GET", `/withdrawals?limit=2&starting_after=${ids[1]}`);
    expect(second.body.data.map((w: { amount: string }) => w.amount)).toEqual(["10"]);
    expect(second.body.has_more).toBe(false);
    const completed = await v.call("GET", "/withdrawals?status=completed");
    expect(completed.body.data).toHaveLength(1);
    expect(completed.body.data[0]).toMatchObject({
      id: ids[0],
      status: "completed",
      payoutState: "completed",
      payoutProcessorTxId: "0xfeed",
      network: "ethereum",
    });
    expect((await v.call("GET", "/withdrawals?status=processing")).body.data).toHaveLength(2);
    expect((await v.call("GET", "/withdrawals?created_lt=2000-01-01T00:00:00Z")).body.data).toHaveLength(0);
    expect((await v.call("GET", "/withdrawals?created_gte=2000-01-01T00:00:00Z")).body.data).toHaveLength(3);
    // Another merchant's id is no cursor here.
    const foreign = await withdraw(server, shop, { amount: "10" });
    expectProblem(
      await v.call("GET", `/withdrawals?starting_after=${foreign.body.request.id}`),
      400,
      "starting_after_not_found",
    );
    expectProblem(await v.call("GET", "/withdrawals?created_gte=2026-13-45"), 400, "validation_failed");
    const detail = await v.call("GET", `/withdrawals/${(ids[0] as string).toUpperCase()}`);
    expect(detail.body).toMatchObject({ id: ids[0], withdrawalMethodId: m.methodId, payoutProcessorTxId: "0xfeed" });
    // No explorer configured: no link. With the operator's explorer template, the transaction links to it.
    expect(detail.body.explorerUrl).toBeNull();
    await server.ctx.store.transaction((tx) =>
      putNetwork(
        tx,
        server.ctx.box,
        "ethereum",
        {
          chainId: 1,
          rpcUrl: "http://127.0.0.1:9/",
          confirmations: 12,
          explorerUrl: "https://explorer.example/tx/{tx}",
        },
        nowIso(),
      ),
    );
    const linked = await v.call("GET", `/withdrawals/${ids[0]}`);
    expect(linked.body.explorerUrl).toBe("https://explorer.example/tx/0xfeed");
    expect((await v.call("GET", `/withdrawals/${ids[1]}`)).body.explorerUrl).toBeNull();
    expectProblem(await owner.call("GET", `/withdrawals/${ids[0]}`), 404, "withdrawal_not_found");
    expect((await owner.call("GET", "/withdrawals")).body.data.map((w: { id: string }) => w.id)).not.toContain(ids[0]);
    expectProblem(await o.call("GET", "/withdrawals/nope"), 404, "withdrawal_not_found");
  });
});

describe("a cooling-off the operator sets", () => {
  it("a method added in the dashboard waits; one the operator adds does not", async () => {
    const cooled = await startTestServer({ env: { WITHDRAWAL_METHOD_COOLING_OFF_MINUTES: "60" } });
    try {
      const m = await fundedMerchant(cooled, "100");
      const o = await invitedUser(cooled, m.id, "owner");
      await stepUp(o);
      const added = await o.call("POST", "/withdrawal-methods", { currency: "USDT", address: evmAddress() });
      const usableFrom = Date.parse(added.body.usableFrom);
      expect(usableFrom - Date.parse(added.body.createdAt)).toBe(3_600_000);
      expectProblem(
        await withdraw(cooled, m, { withdrawalMethodId: added.body.id }),
        400,
        "withdrawal_method_cooling_off",
      );
      expectProblem(
        await o.call("POST", "/withdrawals", {
          requestId: randomUUID(),
          currency: "USDT",
          amount: "10",
          withdrawalMethodId: added.body.id,
        }),
        400,
        "withdrawal_method_cooling_off",
      );
      const audit = await o.call("GET", "/audit");
      expect(audit.body.items.find((i: { action: string }) => i.action === "withdrawal_method.add").target).toContain(
        `takes withdrawals from ${added.body.usableFrom}`,
      );
      // The operator's method (fundedMerchant adds it through the operator API) has none.
      expect((await withdraw(cooled, m)).status).toBe(200);
      // Once the period is over, the method takes withdrawals.
      await cooled.ctx.store.transaction((tx) =>
        tx.db
          .updateTable("withdrawal_methods")
          .set({ usable_from: new Date(Date.now() - 1000).toISOString() })
          .where("id", "=", added.body.id)
          .execute(),
      );
      expect((await withdraw(cooled, m, { withdrawalMethodId: added.body.id })).status).toBe(200);
    } finally {
      await cooled.close();
    }
  });
});

describe("refunds from the dashboard", () => {
  it("refunds a completed invoice in crypto through the signed operation's rules, once per request id", async () => {
    const m = await feeFreeMerchant(server);
    const o = await invitedUser(server, m.id, "owner");
    const d = await invitedUser(server, m.id, "developer");
    const invoice = await completedInvoice(server, m, { currency: "USDT", amount: "50" });
    const to = evmAddress();
    const form = { requestId: randomUUID(), invoiceId: invoice.id, address: to, reason: "returned" };
    await adjust(server, m.id, "USDT", "10");
    await expireStepUp(server, o);
    expectProblem(await o.call("POST", "/refunds/crypto", form), 403, "step_up_required");
    await stepUp(d);
    expectProblem(await d.call("POST", "/refunds/crypto", form), 403, "role_forbidden");
    await stepUp(o);
    expectProblem(
      await o.call("POST", "/refunds/crypto", { ...form, requestId: randomUUID(), withdrawToSameAddress: true }),
      400,
      "refund_destination_ambiguous",
    );
    const refunded = await o.call("POST", "/refunds/crypto", form);
    expect(refunded.status).toBe(200);
    expect(refunded.body.request).toMatchObject({
      id: form.requestId,
      type: "crypto",
      to_address: to,
      status: "processing",
    });
    expect((await o.call("POST", "/refunds/crypto", form)).text).toBe(refunded.text);
    expectProblem(await o.call("POST", "/refunds/crypto", { ...form, requestId: randomUUID() }), 400, "refund_exists");
    expect(await invoiceStatus(server, m, invoice.id)).toBe("refund_processing");
    await payoutOutcome(server, m, form.requestId, { status: "completed", txId: "0xabc" });
    expect(await invoiceStatus(server, m, invoice.id)).toBe("refunded");
    const listed = await d.call("GET", "/refunds?status=completed");
    expect(listed.body.data).toHaveLength(1);
    expect(listed.body.data[0]).toMatchObject({
      id: form.requestId,
      invoiceId: invoice.id,
      reason: "returned",
      payoutProcessorTxId: "0xabc",
      debitCurrency: "USDT",
    });
    expect((await d.call("GET", `/refunds/${form.requestId}`)).body.status).toBe("completed");
    expectProblem(await owner.call("GET", `/refunds/${form.requestId}`), 404, "refund_not_found");
    const audit = await o.call("GET", "/audit");
    expect(audit.body.items.find((i: { action: string }) => i.action === "refund.crypto").target).toContain(invoice.id);
    await expectLedgerBalanced(server);
  });

  it("refunds a fiat invoice; another merchant's invoice is refused as the API refuses it", async () => {
    const m = await feeFreeMerchant(server);
    const o = await invitedUser(server, m.id, "owner");
    const invoice = await completedInvoice(server, m, { currency: "EUR", amount: "100" });
    await stepUp(o);
    const refunded = await o.call("POST", "/refunds/fiat", { requestId: randomUUID(), invoiceId: invoice.id });
    expect(refunded.status).toBe(200);
    expect(refunded.body.request).toMatchObject({ type: "fiat", currency: "EUR", to_address: null });
    const foreign = await completedInvoice(server, await feeFreeMerchant(server), { currency: "EUR", amount: "10" });
    expectProblem(
      await o.call("POST", "/refunds/fiat", { requestId: randomUUID(), invoiceId: foreign.id }),
      400,
      "refund_invoice_not_found",
    );
  });
});

describe("the ledger", () => {
  it("pages each balance's entries with their cause; the balance shown is the sum of its entries", async () => {
    const m = await fundedMerchant(server, "100");
    const v = await invitedUser(server, m.id, "viewer");
    await adjust(server, m.id, "USDT", "-5");
    const w = await withdraw(server, m, { amount: "20" });
    await payoutOutcome(server, m as RefundMerchant, w.body.request.id, { status: "failed" });
    const page = await v.call("GET", "/ledger?currency=USDT&limit=2");
    expect(page.status).toBe(200);
    expect(page.body.balance).toBe("95");
    expect(page.body.items.map((e: { cause: string; amount: string }) => `${e.cause} ${e.amount}`)).toEqual([
      "reversal 20",
      "withdrawal -20",
    ]);
    const rest = await v.call("GET", `/ledger?currency=USDT&limit=2&before=${page.body.nextBefore}`);
    expect(rest.body.items.map((e: { cause: string; amount: string }) => `${e.cause} ${e.amount}`)).toEqual([
      "adjustment -5",
      "adjustment 100",
    ]);
    // The balance equals the sum of every entry, on a merchant with many movements too.
    for (const merchantId of [m.id, shop.id]) {
      const user = merchantId === m.id ? v : viewer;
      let sum = 0n;
      let before: string | null = null;
      let balance = "";
      for (let i = 0; i < 100; i++) {
        const page: Answer<any> = await user.call(
          "GET",
          `/ledger?currency=USDT&limit=3${before ? `&before=${before}` : ""}`,
        );
        balance = page.body.balance;
        for (const e of page.body.items) sum += usdtMinor(e.amount);
        before = page.body.nextBefore;
        if (before === null) break;
      }
      expect(sum).toBe(usdtMinor(balance));
      expect(balance).toBe(await balanceOf(server, merchantId));
    }
    expectProblem(await v.call("GET", "/ledger?currency=DOGE"), 400, "unknown_currency");
    // Another merchant's entries never show: a new merchant has none.
    const empty = await invitedUser(server, (await createMerchant(server)).id, "viewer");
    expect((await empty.call("GET", "/ledger?currency=USDT")).body).toMatchObject({ balance: "0", items: [] });
  });

  it("exports a balance as CSV, escaped and guarded against formulas", async () => {
    const m = await fundedMerchant(server, "0");
    const v = await invitedUser(server, m.id, "viewer");
    await admin(server, "POST", `/merchants/${m.id}/balance-adjustments`, {
      currency: "USDT",
      amount: "7.5",
      memo: '=HYPERLINK("http://evil","x"), really',
    });
    await admin(server, "POST", `/merchants/${m.id}/balance-adjustments`, {
      currency: "USDT",
      amount: "-2",
      memo: "fee",
    });
    const csv = await v.call("GET", "/ledger/export?currency=USDT");
    expect(csv.status).toBe(200);
    expect(csv.headers.get("content-type")).toMatch(/^text\/csv/);
    const lines = csv.text.split("\r\n");
    expect(lines[0]).toBe("entry_id,created_at,currency,cause,cause_id,kind,credit,debit,memo");
    expect(lines[1]).toMatch(/^\d+,[^,]+,USDT,adjustment,[^,]+,adjustment,,2,fee$/);
    expect(lines[2]).toMatch(/,7\.5,,"'=HYPERLINK\(""http:\/\/evil"",""x""\), really"$/);
    expect(lines).toHaveLength(4);
  });
});

describe("resolution of late and partial payments by owners", () => {
  /** An invoice that expired with `paid` of its 100 USDT received and confirmed. */
  async function expiredWithPayment(m: RefundMerchant, paid: string): Promise<string> {
    const invoice = await createInvoice(server, m.apiKey, { currency: "USDT", amount: "100" });
    expect((await pay(server, m.apiKey, invoice.id, { amount: paid })).status).toBe(200);
    await server.ctx.store.transaction((tx) =>
      tx.db
        .updateTable("invoices")
        .set({ expires_at: new Date(Date.now() - 60_000).toISOString() })
        .where("id", "=", invoice.id)
        .execute(),
    );
    const expiry = server.workers.loops.expiry;
    if (!expiry) throw new Error("no expiry loop");
    for (let i = 0; i < 10 && (await expiry.runOnce()) > 0; i++) {}
    expect(["failed", "expired"]).toContain(await invoiceStatus(server, m, invoice.id));
    return invoice.id;
  }

  it("an owner accepts or refunds it once, with the operator API's rule; step-up, audited; others cannot", async () => {
    const m = await feeFreeMerchant(server);
    const o = await invitedUser(server, m.id, "owner");
    const d = await invitedUser(server, m.id, "developer");
    const accepted = await expiredWithPayment(m, "40");
    await expireStepUp(server, o);
    expectProblem(await o.call("POST", `/invoices/${accepted}/resolve`, { action: "accept" }), 403, "step_up_required");
    await stepUp(d);
    expectProblem(await d.call("POST", `/invoices/${accepted}/resolve`, { action: "accept" }), 403, "role_forbidden");
    await stepUp(o);
    expectProblem(
      await o.call("POST", `/invoices/${accepted}/resolve`, { action: "refund" }),
      400,
      "invalid_resolution",
    );
    const before = await balanceOf(server, m.id);
    const done = await o.call("POST", `/invoices/${accepted}/resolve`, { action: "accept" });
    expect(done.status).toBe(200);
    expect(done.body.status).toBe("completed");
    expect(await balanceOf(server, m.id)).not.toBe(before);
    expectProblem(
      await o.call("POST", `/invoices/${accepted}/resolve`, { action: "accept" }),
      409,
      "invoice_already_resolved",
    );
    // Another merchant's invoice is unknown here.
    expectProblem(
      await owner.call("POST", `/invoices/${accepted}/resolve`, { action: "accept" }),
      404,
      "invoice_not_found",
    );

    const refunded = await expiredWithPayment(m, "30");
    expectProblem(
      await o.call("POST", `/invoices/${refunded}/resolve`, { action: "refund", address: "0x12" }),
      400,
      "invalid_address",
    );
    const to = evmAddress();
    expect((await o.call("POST", `/invoices/${refunded}/resolve`, { action: "refund", address: to })).status).toBe(200);
    // The resolution's refund is in the refunds list, with its payout.
    const refunds = await d.call("GET", "/refunds");
    expect(refunds.body.data).toEqual([
      expect.objectContaining({ id: `resolution-${refunded}`, invoiceId: refunded, toAddress: expect.any(String) }),
    ]);
    const audit = await o.call("GET", "/audit");
    const targets = audit.body.items
      .filter((i: { action: string }) => i.action === "invoice.resolve")
      .map((i: { target: string }) => i.target);
    expect(targets).toEqual([`${refunded}: refund to ${to}`, `${accepted}: accept`]);
    await expectLedgerBalanced(server);
  });
});

describe("a race between the dashboard and the signed API", () => {
  it("never takes a balance below zero", async () => {
    const m = await fundedMerchant(server, "100");
    const o = await invitedUser(server, m.id, "owner");
    await stepUp(o);
    const attempts = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        i % 2 === 0
          ? o.call("POST", "/withdrawals", {
              requestId: randomUUID(),
              currency: "USDT",
              amount: "30",
              withdrawalMethodId: m.methodId,
            })
          : withdraw(server, m, { amount: "30" }),
      ),
    );
    const accepted = attempts.filter((a) => a.status === 200);
    for (const refused of attempts.filter((a) => a.status !== 200)) expectProblem(refused, 400, "insufficient_balance");
    expect(accepted).toHaveLength(3);
    expect(await balanceOf(server, m.id)).toBe("10");
    await expectLedgerBalanced(server);
  });
});
