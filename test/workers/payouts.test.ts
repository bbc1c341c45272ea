// Payouts of withdrawals: the worker's hand-over, sandbox settlement, reversal of failures, and reconciliation after a crash.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claimPayouts, findPayout } from "../../src/store/payouts.ts";
import {
  type PayoutProcessor,
  runPayoutBatch,
  type SendAnswer,
  sandboxPayoutProcessor,
} from "../../src/workers/payouts.ts";
import {
  type Answer,
  admin,
  call,
  expectProblem,
  merchant,
  startTestServer,
  type TestServer,
} from "../support/server.ts";
import {
  balanceOf,
  expectLedgerBalanced,
  type FundedMerchant,
  fundedMerchant,
  movementCount,
  payoutWorker,
  withdraw,
} from "../support/withdrawals.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

function outcome(target: TestServer, m: FundedMerchant, requestId: string, body: Record<string, unknown>) {
  return merchant(target, m.apiKey, "POST", `/sandbox/v1/payouts/${requestId}/outcome`, body);
}

/** What a problem answer says, its instance aside (each request has its own). */
function problemWords(answer: Answer<any>) {
  const { status, code, detail, errors } = answer.body;
  return { status, code, detail, errors };
}

const ALREADY_SETTLED = {
  status: 409,
  code: "payout_already_settled",
  detail: "This payout was already settled; its outcome cannot change.",
};

async function stateOf(target: TestServer, requestId: string): Promise<string | undefined> {
  return (await findPayout(target.ctx.store, requestId.toLowerCase()))?.state;
}

/** A processor that records every hand-over and answers as told. */
function recordingProcessor(answer: () => Promise<SendAnswer>) {
  const handedOver: string[] = [];
  const processor: PayoutProcessor = {
    name: "recording",
    send: async (payout) => {
      handedOver.push(payout.requestKey);
      return answer();
    },
    check: async () => ({ kind: "pending", processorStatus: "pending", checkAt: null }),
  };
  return { processor, handedOver };
}

function batch(target: TestServer, processor: PayoutProcessor, now = new Date(), leaseMs = 60_000) {
  return runPayoutBatch(target.ctx.store, {
    processor,
    now,
    leaseMs,
    batchSize: 50,
    publicBaseUrl: target.config.publicBaseUrl,
    log: target.app.log,
  });
}

describe("the sandbox payout processor", () => {
  it("is handed each accepted withdrawal once, which then shows its processor status", async () => {
    const m = await fundedMerchant(server, "100");
    const { requestId } = await withdraw(server, m);
    expect(await stateOf(server, requestId)).toBe("queued");
    expect(await payoutWorker(server).runOnce()).toBeGreaterThan(0);
    const payout = await findPayout(server.ctx.store, requestId);
    expect(payout).toMatchObject({ state: "sent", processor: "sandbox", processorStatus: "submitted", attempts: 1 });
    await payoutWorker(server).runOnce();
    expect((await findPayout(server.ctx.store, requestId))?.attempts).toBe(1);
  });

  it("settles as completed through the outcome route, answering the updated withdrawal; once only", async () => {
    const m = await fundedMerchant(server, "100");
    const { requestId, answer: accepted } = await withdraw(server, m, { amount: "15" });
    await payoutWorker(server).runOnce();
    await new Promise((resolve) => setTimeout(resolve, 5));
    const settled = await outcome(server, m, requestId, { status: "completed", txId: "0xfeed" });
    expect(settled.status).toBe(200);
    expect(settled.body).toEqual({
      request: {
        ...accepted.body.request,
        status: "completed",
        payout_processor_status: "confirmed",
        payout_processor_tx_id: "0xfeed",
        updated_at: expect.any(String),
      },
    });
    expect(Object.keys(settled.body.request)).toEqual(Object.keys(accepted.body.request));
    expect(settled.body.request.updated_at > accepted.body.request.updated_at).toBe(true);
    const again = await outcome(server, m, requestId, { status: "failed" });
    expectProblem(again, 409, "payout_already_settled");
    expect(problemWords(again)).toEqual(ALREADY_SETTLED);
    expectProblem(await outcome(server, m, requestId, { status: "completed" }), 409, "payout_already_settled");
    expect(await balanceOf(server, m.id)).toBe("85");
    // A retry of the signed request still answers the original response.
    const retry = await withdraw(server, m, { amount: "15" }, { requestId });
    expect(retry.answer.text).toBe(accepted.text);
    await expectLedgerBalanced(server);
  });

  it("settles as failed: status failed and the debit credited back exactly once", async () => {
    const m = await fundedMerchant(server, "100");
    const { requestId } = await withdraw(server, m, { amount: "40" });
    expect(await balanceOf(server, m.id)).toBe("60");
    await payoutWorker(server).runOnce();
    const failed = await outcome(server, m, requestId, { status: "failed" });
    expect(failed.status).toBe(200);
    expect(failed.body.request).toMatchObject({
      status: "failed",
      payout_processor_status: "rejected",
      payout_processor_tx_id: null,
    });
    expect(await balanceOf(server, m.id)).toBe("100");
    expectProblem(await outcome(server, m, requestId, { status: "failed" }), 409, "payout_already_settled");
    expect(await balanceOf(server, m.id)).toBe("100");
    expect(await movementCount(server, requestId, "debit")).toBe(1);
    expect(await movementCount(server, requestId, "reversal")).toBe(1);
    await expectLedgerBalanced(server);
  });

  it("accepts an outcome before any worker handed the payout over, which then is never handed over", async () => {
    const m = await fundedMerchant(server, "100");
    const { requestId } = await withdraw(server, m);
    const settled = await outcome(server, m, requestId.toUpperCase(), { status: "completed" });
    expect(settled.status).toBe(200);
    expect(settled.body.request.payout_processor_tx_id).toMatch(/^0x[0-9a-f]{64}$/);
    const { processor, handedOver } = recordingProcessor(async () => ({
      kind: "accepted",
      processorStatus: "x",
      processorTxId: null,
      checkAt: null,
    }));
    await batch(server, processor);
    expect(handedOver).not.toContain(requestId);
  });

  it("answers 404 for unknown ids and other merchants' payouts, 401 without a key", async () => {
    const m = await fundedMerchant(server, "100");
    const other = await fundedMerchant(server, "100");
    const { requestId } = await withdraw(server, m);
    const foreign = await outcome(server, other, requestId, { status: "completed" });
    const unknown = await outcome(server, m, randomUUID(), { status: "completed" });
    const malformed = await outcome(server, m, "not-a-uuid", { status: "completed" });
    for (const answer of [foreign, unknown, malformed]) {
      expectProblem(answer, 404, "payout_not_found");
      // Another merchant's payout answers exactly as an unknown one.
      expect(problemWords(answer)).toEqual({
        status: 404,
        code: "payout_not_found",
        detail: "No payout of yours has this request id.",
      });
    }
    expectProblem(await outcome(server, m, requestId, { status: "done" }), 400, "validation_failed");
    expectProblem(await outcome(server, m, requestId, { status: "completed", extra: 1 }), 400, "validation_failed");
    const anonymous = await call(server.baseUrl, "POST", `/sandbox/v1/payouts/${requestId}/outcome`, {
      body: { status: "completed" },
    });
    expectProblem(anonymous, 401, "unauthorized");
    expect(await stateOf(server, requestId)).toBe("queued");
  });
});

describe("sandbox settlement by itself", () => {
  it("completes a payout SANDBOX_PAYOUT_DELAY_MS after acceptance", async () => {
    const timed = await startTestServer({ env: { SANDBOX_PAYOUT_DELAY_MS: "300" } });
    try {
      const m = await fundedMerchant(timed, "100");
      const { requestId } = await withdraw(timed, m);
      const acceptedAt = Date.now();
      await payoutWorker(timed).runOnce();
      expect(await stateOf(timed, requestId)).toBe("sent");
      if (Date.now() - acceptedAt < 250) {
        await payoutWorker(timed).runOnce();
        expect(await stateOf(timed, requestId)).toBe("sent");
      }
      await new Promise((resolve) => setTimeout(resolve, 350));
      await payoutWorker(timed).runOnce();
      const payout = await findPayout(timed.ctx.store, requestId);
      expect(payout).toMatchObject({ state: "completed", processorStatus: "confirmed" });
      expect(payout?.processorTxId).toMatch(/^0x[0-9a-f]{64}$/);
      expectProblem(await outcome(timed, m, requestId, { status: "failed" }), 409, "payout_already_settled");
    } finally {
      await timed.close();
    }
  });

  it("never settles by itself when SANDBOX_PAYOUT_DELAY_MS is 0", async () => {
    const manual = await startTestServer({ env: { SANDBOX_PAYOUT_DELAY_MS: "0" } });
    try {
      const m = await fundedMerchant(manual, "100");
      const { requestId } = await withdraw(manual, m);
      await payoutWorker(manual).runOnce();
      await new Promise((resolve) => setTimeout(resolve, 20));
      await payoutWorker(manual).runOnce();
      const payout = await findPayout(manual.ctx.store, requestId);
      expect(payout).toMatchObject({ state: "sent", nextCheckAt: null });
    } finally {
      await manual.close();
    }
  });
});

describe("settling a batch", () => {
  it("settles every due outcome of a batch; one that cannot settle holds none of the others back", async () => {
    const m = await fundedMerchant(server, "100");
    const keys: string[] = [];
    for (let i = 0; i < 3; i++) keys.push((await withdraw(server, m, { amount: "10" })).requestId.toLowerCase());
    const [good1, bad, good2] = keys as [string, string, string];
    const later = new Date(Date.now() + 3_600_000);
    const processor: PayoutProcessor = {
      name: "settling",
      send: async () => ({ kind: "accepted", processorStatus: "ok", processorTxId: null, checkAt: later }),
      // A broken answer for one payout: its settlement throws (the state table has no such outcome).
      check: async (payout) => ({
        kind: "settled",
        outcome: (payout.requestKey === bad ? "lost" : "completed") as "completed",
        processorStatus: "done",
        processorTxId: `tx-${payout.requestKey}`,
      }),
    };
    await batch(server, processor);
    for (const key of keys) expect(await stateOf(server, key)).toBe("sent");
    await expect(batch(server, processor, new Date(later.getTime() + 1000))).rejects.toThrow(/sent -> lost/);
    expect(await stateOf(server, good1)).toBe("completed");
    expect(await stateOf(server, good2)).toBe("completed");
    expect(await stateOf(server, bad)).toBe("sent");
    expect(await balanceOf(server, m.id)).toBe("70");
    await expectLedgerBalanced(server);
  });
});

describe("reconciliation", () => {
  it("sets a payout aside when its worker died between claim and report, and never sends it again", async () => {
    const m = await fundedMerchant(server, "100");
    const accepted = await withdraw(server, m, { amount: "30" });
    const key = accepted.requestId;
    // A worker claims the payout, then dies before reporting anything.
    const claimedAt = new Date();
    const claimed = await server.ctx.store.transaction((tx) =>
      claimPayouts(tx, {
        now: claimedAt.toISOString(),
        leaseUntil: new Date(claimedAt.getTime() + 60_000).toISOString(),
        limit: 1000,
        processor: "sandbox",
      }),
    );
    expect(claimed.map((p) => p.requestKey)).toContain(key);
    expect(await stateOf(server, key)).toBe("sending");
    // While the lease runs, the retry is the original response.
    expect((await withdraw(server, m, { amount: "30" }, { requestId: key })).answer.text).toBe(accepted.answer.text);

    const { processor, handedOver } = recordingProcessor(async () => ({
      kind: "accepted",
      processorStatus: "x",
      processorTxId: null,
      checkAt: null,
    }));
    await batch(server, processor, new Date(claimedAt.getTime() + 30_000));
    expect(await stateOf(server, key)).toBe("sending");
    await batch(server, processor, new Date(claimedAt.getTime() + 60_001));
    expect(await stateOf(server, key)).toBe("needs_reconciliation");
    await batch(server, processor, new Date(claimedAt.getTime() + 120_000));
    expect(handedOver).not.toContain(key);
    expect(await stateOf(server, key)).toBe("needs_reconciliation");

    const retry = await withdraw(server, m, { amount: "30" }, { requestId: key });
    expectProblem(retry.answer, 409, "request_needs_reconciliation");
    // Another merchant still learns nothing, and a different body is still a reuse.
    const stranger = await fundedMerchant(server, "100");
    expectProblem(
      (await withdraw(server, stranger, { amount: "30" }, { requestId: key })).answer,
      409,
      "request_id_unavailable",
    );
    expectProblem((await withdraw(server, m, { amount: "31" }, { requestId: key })).answer, 409, "request_id_reused");

    const listed = await admin(server, "GET", "/payouts?state=needs_reconciliation");
    expect(listed.status).toBe(200);
    const entry = listed.body.find((p: { requestId: string }) => p.requestId === key);
    expect(entry).toMatchObject({ state: "needs_reconciliation", amount: "30", currency: "USDT", attempts: 1 });
    expect(entry.lastError).toMatch(/lease/);

    // The operator established that nothing left: failed, and the money comes back.
    const resolved = await admin(server, "POST", `/payouts/${key}/outcome`, { status: "failed" });
    expect(resolved.status).toBe(200);
    expect(resolved.body).toMatchObject({ state: "failed", processorStatus: "operator_failed" });
    expect(await balanceOf(server, m.id)).toBe("100");
    const again = await admin(server, "POST", `/payouts/${key}/outcome`, { status: "completed" });
    expectProblem(again, 409, "payout_already_settled");
    expect(problemWords(again)).toEqual(ALREADY_SETTLED);
    const unknown = await admin(server, "POST", `/payouts/${randomUUID()}/outcome`, { status: "completed" });
    expectProblem(unknown, 404, "payout_not_found");
    expect(problemWords(unknown)).toEqual({
      status: 404,
      code: "payout_not_found",
      detail: "No payout has this request id.",
    });

    // Settled, the retry is the original response again.
    expect((await withdraw(server, m, { amount: "30" }, { requestId: key })).answer.text).toBe(accepted.answer.text);
    await expectLedgerBalanced(server);
  });

  it("asks the sandbox processor about a payout whose worker died mid hand-over: settled, never an operator's task", async () => {
    const m = await fundedMerchant(server, "100");
    const interrupted = await withdraw(server, m, { amount: "30" });
    const unanswered = await withdraw(server, m, { amount: "20" });
    const claimedAt = new Date();
    // A worker claims both, then dies (SIGKILL) before reporting anything.
    const claimed = await server.ctx.store.transaction((tx) =>
      claimPayouts(tx, {
        now: claimedAt.toISOString(),
        leaseUntil: new Date(claimedAt.getTime() + 60_000).toISOString(),
        limit: 1000,
        processor: "sandbox",
      }),
    );
    const keys = [interrupted.requestId, unanswered.requestId];
    expect(claimed.map((p) => p.requestKey)).toEqual(expect.arrayContaining(keys));
    const sandbox = sandboxPayoutProcessor(150);
    const sent: string[] = [];
    let lookupFails = true;
    const processor: PayoutProcessor = {
      ...sandbox,
      send: async (payout, now) => {
        sent.push(payout.requestKey);
        return sandbox.send(payout, now);
      },
      // The first question about one of them gets no answer: it is asked again, never set aside.
      lookup: async (payout, now) => {
        if (payout.requestKey === unanswered.requestId && lookupFails) {
          lookupFails = false;
          throw new Error("the sandbox did not answer");
        }
        return sandbox.lookup!(payout, now);
      },
    };
    const expiredAt = new Date(claimedAt.getTime() + 60_001);
    await batch(server, processor, expiredAt);
    expect(await stateOf(server, interrupted.requestId)).toBe("completed");
    expect(await stateOf(server, unanswered.requestId)).toBe("sending");
    await batch(server, processor, new Date(expiredAt.getTime() + 1000));
    expect(await stateOf(server, unanswered.requestId)).toBe("completed");
    for (const key of keys) {
      expect(await findPayout(server.ctx.store, key)).toMatchObject({
        processor: "sandbox",
        processorStatus: "confirmed",
        attempts: 1,
      });
    }
    expect(sent.filter((k) => keys.includes(k))).toEqual([]);
    const waiting = await admin(server, "GET", "/payouts?state=needs_reconciliation");
    expect(waiting.body.map((p: { requestId: string }) => p.requestId)).not.toEqual(
      expect.arrayContaining([interrupted.requestId]),
    );
    expect(await balanceOf(server, m.id)).toBe("50");
    // The retry of a settled withdrawal answers as the original did, now completed.
    expect((await withdraw(server, m, { amount: "30" }, { requestId: interrupted.requestId })).answer.status).toBe(200);
    await expectLedgerBalanced(server);
  });

  it("with SANDBOX_PAYOUT_DELAY_MS=0 an interrupted sandbox payout waits for the sandbox outcome route, not an operator", async () => {
    const m = await fundedMerchant(server, "100");
    const { requestId } = await withdraw(server, m, { amount: "10" });
    const claimedAt = new Date();
    await server.ctx.store.transaction((tx) =>
      claimPayouts(tx, {
        now: claimedAt.toISOString(),
        leaseUntil: new Date(claimedAt.getTime() + 60_000).toISOString(),
        limit: 1000,
        processor: "sandbox",
      }),
    );
    await batch(server, sandboxPayoutProcessor(0), new Date(claimedAt.getTime() + 60_001));
    expect(await findPayout(server.ctx.store, requestId)).toMatchObject({
      state: "sent",
      processorStatus: "submitted",
    });
    expect((await outcome(server, m, requestId, { status: "failed" })).status).toBe(200);
    expect(await stateOf(server, requestId)).toBe("failed");
    expect(await balanceOf(server, m.id)).toBe("100");
    await expectLedgerBalanced(server);
  });

  it("sets a payout aside at once when the hand-over fails without a clear answer", async () => {
    const m = await fundedMerchant(server, "100");
    const { requestId } = await withdraw(server, m);
    const { processor, handedOver } = recordingProcessor(async () => {
      throw new Error("connection reset by the processor");
    });
    await batch(server, processor);
    expect(handedOver).toContain(requestId);
    const payout = await findPayout(server.ctx.store, requestId);
    expect(payout).toMatchObject({ state: "needs_reconciliation", lastError: "connection reset by the processor" });
    await batch(server, processor);
    expect(handedOver.filter((k) => k === requestId).length).toBe(1);
    expect(await balanceOf(server, m.id)).toBe("90");
  });

  it("times out a hand-over that hangs, within half the lease, and sets it aside", async () => {
    const m = await fundedMerchant(server, "100");
    const { requestId } = await withdraw(server, m);
    const { processor } = recordingProcessor(() => new Promise<SendAnswer>(() => {}));
    await batch(server, processor, new Date(), 100);
    expect(await stateOf(server, requestId)).toBe("needs_reconciliation");
  });

  it("renews each payout's lease before its hand-over, so a long batch never sends a payout it no longer holds", async () => {
    // Clear the queue left by earlier tests, so this batch claims exactly the two payouts below.
    await batch(
      server,
      recordingProcessor(async () => ({ kind: "accepted", processorStatus: "ok", processorTxId: null, checkAt: null }))
        .processor,
    );
    const m = await fundedMerchant(server, "100");
    const ids = [
      (await withdraw(server, m)).requestId,
      (await withdraw(server, m)).requestId,
      (await withdraw(server, m)).requestId,
    ];
    // Lease 200 ms, each hand-over 80 ms (within the 100 ms bound): the third runs from 160 to 240 ms,
    // past the batch's claim. A sweep by another process at 230 ms must not take it for expired.
    const answered = () =>
      new Promise<SendAnswer>((resolve) =>
        setTimeout(() => resolve({ kind: "accepted", processorStatus: "ok", processorTxId: null, checkAt: null }), 80),
      );
    const { processor, handedOver } = recordingProcessor(answered);
    const sweeping = (async () => {
      await new Promise((resolve) => setTimeout(resolve, 230));
      return batch(server, recordingProcessor(answered).processor, new Date(), 200);
    })();
    await batch(server, processor, new Date(), 200);
    await sweeping;
    expect(handedOver).toHaveLength(3);
    for (const id of ids) expect(await stateOf(server, id)).toBe("sent");
    expect(await balanceOf(server, m.id)).toBe("70");
  });

  it("does not hand over a payout whose outcome was reported after the claim, while the lease still holds", async () => {
    await batch(
      server,
      recordingProcessor(async () => ({ kind: "accepted", processorStatus: "ok", processorTxId: null, checkAt: null }))
        .processor,
    );
    const m = await fundedMerchant(server, "100");
    const first = (await withdraw(server, m)).requestId;
    const second = (await withdraw(server, m)).requestId;
    // During the first hand-over, the operator reports the second payout paid by other means.
    let reported = false;
    const { processor, handedOver } = recordingProcessor(async () => {
      if (!reported) {
        reported = true;
        const outcome = await admin(server, "POST", `/payouts/${second}/outcome`, { status: "completed" });
        expect(outcome.status).toBe(200);
      }
      return { kind: "accepted", processorStatus: "ok", processorTxId: null, checkAt: null };
    });
    await batch(server, processor);
    expect(handedOver).toEqual([first]);
    expect(await stateOf(server, first)).toBe("sent");
    expect(await stateOf(server, second)).toBe("completed");
  });

  it("fails a payout the processor refuses outright, crediting the debit back", async () => {
    const m = await fundedMerchant(server, "100");
    const { requestId } = await withdraw(server, m, { amount: "25" });
    const { processor } = recordingProcessor(async () => ({
      kind: "refused",
      processorStatus: "invalid_address",
      reason: "bad address",
    }));
    await batch(server, processor);
    expect(await findPayout(server.ctx.store, requestId)).toMatchObject({
      state: "failed",
      processorStatus: "invalid_address",
    });
    expect(await balanceOf(server, m.id)).toBe("100");
    expect(await movementCount(server, requestId, "reversal")).toBe(1);
    await expectLedgerBalanced(server);
  });
});

describe("live mode", () => {
  it("has no sandbox routes; payouts wait for the operator, who records the outcome", async () => {
    const live = await startTestServer({ env: { SERVICE_MODE: "live" } });
    try {
      const m = await fundedMerchant(live, "100");
      const { requestId, answer } = await withdraw(live, m, { amount: "20" });
      expect(answer.status).toBe(200);
      expectProblem(await outcome(live, m, requestId, { status: "completed" }), 404, "not_found");
      await payoutWorker(live).runOnce();
      expect(await findPayout(live.ctx.store, requestId)).toMatchObject({
        state: "sent",
        processor: "operator",
        processorStatus: "awaiting_operator",
      });
      const paid = await admin(live, "POST", `/payouts/${requestId}/outcome`, {
        status: "completed",
        txId: "bank-123",
      });
      expect(paid.body).toMatchObject({ state: "completed", processorTxId: "bank-123", amount: "20" });
      expect(await balanceOf(live, m.id)).toBe("80");
      await expectLedgerBalanced(live);
    } finally {
      await live.close();
    }
  });
});
