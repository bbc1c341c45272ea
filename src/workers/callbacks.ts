// Callback delivery worker: claims due outbox events, signs and POSTs them with bounded concurrency, records every attempt.
import { randomUUID } from "node:crypto";
import type { FastifyBaseLogger } from "fastify";
import { type ResolveHost, resolveCallbackDestination, systemResolveHost } from "../app/callbackDestination.ts";
import type { ServiceContext } from "../app/context.ts";
import { callbackRetryDelayMs } from "../domain/callbackSchedule.ts";
import { callbackSignatureHeader, signingSecrets } from "../domain/callbackSignature.ts";
import { assert } from "../domain/result.ts";
import {
  type AttemptOutcome,
  type CallbackEvent,
  claimDueCallbacks,
  completeCallbackAttempt,
  releaseCallbackClaims,
} from "../store/callbacks.ts";
import { readCallbackSecrets } from "../store/merchants.ts";
import { isStoreUnavailable } from "../store/unavailable.ts";
import { answerKeptFrom, type CallbackAnswer, postCallback } from "./callbackHttp.ts";
import type { Loop } from "./loop.ts";

export const CALLBACK_USER_AGENT = "merchant-payments-callbacks/1";

export interface CallbackWorkerOptions {
  /** When false, deliveries start only through runOnce (tests). */
  autoStart?: boolean;
  /** Bound of one attempt (resolve, connect, send, read the answer). */
  timeoutMs: number;
  /** Attempts in flight in this process, all destinations together. */
  maxInFlight?: number;
  /** Attempts in flight in this process to one destination (`host[:port]`). */
  maxPerDestination?: number;
  /**
   * Attempts in flight in this process for one merchant, whatever its destinations: a merchant
   * whose endpoints never answer fills only its own slots (fairness, docs/callbacks.md).
   */
  maxPerMerchant?: number;
  /** Pause between looks for due events when nothing is happening. */
  pollMs?: number;
  /** How long a claim holds; past it a crashed worker's events are due again. Must exceed timeoutMs. */
  leaseMs?: number;
  lookup?: ResolveHost;
  /**
   * Whether an answer from this (checked, pinned) address is kept: by default only a public
   * address's. Tests stand a loopback receiver in for a public one through it.
   */
  answerKept?: (address: string) => boolean;
  clock?: () => Date;
  random?: () => number;
}

export const CALLBACK_DEFAULTS = { maxInFlight: 16, maxPerDestination: 2, maxPerMerchant: 4, pollMs: 1000 } as const;

function isSuccess(answer: CallbackAnswer): boolean {
  return answer.error === null && answer.statusCode !== null && answer.statusCode >= 200 && answer.statusCode < 300;
}

export function startCallbackWorker(ctx: ServiceContext, log: FastifyBaseLogger, options: CallbackWorkerOptions): Loop {
  const maxInFlight = options.maxInFlight ?? CALLBACK_DEFAULTS.maxInFlight;
  const maxPerDestination = options.maxPerDestination ?? CALLBACK_DEFAULTS.maxPerDestination;
  const maxPerMerchant = options.maxPerMerchant ?? CALLBACK_DEFAULTS.maxPerMerchant;
  const pollMs = options.pollMs ?? CALLBACK_DEFAULTS.pollMs;
  const leaseMs = options.leaseMs ?? options.timeoutMs * 2 + 30_000;
  const lookup = options.lookup ?? systemResolveHost;
  const answerKept = options.answerKept ?? answerKeptFrom;
  const clock = options.clock ?? (() => new Date());
  const random = options.random ?? Math.random;
  const autoStart = options.autoStart ?? true;
  assert(leaseMs > options.timeoutMs, "the callback lease outlasts an attempt");

  const inFlight = new Map<string, Promise<void>>();
  const perDestination = new Map<string, number>();
  const perMerchant = new Map<string, number>();
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  // Claims run one at a time in a process, so the in-flight counts they rely on are exact.
  let claiming: Promise<unknown> = Promise.resolve();

  /** Resolves, signs and posts one event; throws only when something needed for the request is broken. */
  const send = async (event: CallbackEvent): Promise<{ answer: CallbackAnswer; permanent: boolean }> => {
    const began = performance.now();
    const destination = await resolveCallbackDestination(event.url, ctx.config.serviceMode, lookup, options.timeoutMs);
    if (!destination.ok) {
      // An unusable URL will not become usable; a forbidden or unresolved address may change, so it is retried.
      return {
        permanent: destination.error === "callback_url_invalid",
        answer: { statusCode: null, error: destination.detail ?? destination.error, responseBody: null, durationMs: 0 },
      };
    }
    const secrets = await readCallbackSecrets(ctx.store, ctx.box, event.merchantId);
    assert(secrets, `merchant ${event.merchantId} of ${event.id} exists`);
    const timestamp = Math.floor(clock().getTime() / 1000);
    const answer = await postCallback({
      destination: destination.value,
      body: event.body,
      headers: {
        "content-type": "application/json",
        "user-agent": CALLBACK_USER_AGENT,
        "webhook-id": event.id,
        "webhook-timestamp": String(timestamp),
        "webhook-signature": callbackSignatureHeader(signingSecrets(secrets, clock()), event.id, timestamp, event.body),
      },
      timeoutMs: Math.max(1, options.timeoutMs - Math.round(performance.now() - began)),
      keepAnswer: answerKept(destination.value.address.address),
    });
    return { answer, permanent: false };
  };

  /** One attempt of one claimed event, from resolving its host to recording the outcome. */
  const attempt = async (event: CallbackEvent, token: string): Promise<void> => {
    const startedAt = clock();
    const began = performance.now();
    const elapsed = () => Math.round(performance.now() - began);
    let answer: CallbackAnswer;
    let permanent = false;
    try {
      const built = await send(event);
      answer = { ...built.answer, durationMs: elapsed() };
      permanent = built.permanent;
    } catch (error) {
      // The store being down is not the merchant's failure: the claim lapses and the event comes back.
      if (isStoreUnavailable(error)) throw error;
      // Anything else that stops a request being built (a secret that cannot be opened, a URL an
      // older release accepted) is a failed attempt on the normal schedule, recorded like the rest,
      // never a claim that lapses silently again and again.
      answer = {
        statusCode: null,
        error: `the request could not be made: ${(error as Error).message ?? String(error)}`.slice(0, 500),
        responseBody: null,
        durationMs: elapsed(),
      };
    }
    const finishedAt = clock();
    let outcome: AttemptOutcome;
    if (isSuccess(answer)) outcome = { status: "delivered" };
    else {
      const delay = permanent ? null : callbackRetryDelayMs(event.schedulePosition + 1, random);
      outcome =
        delay === null
          ? { status: "failed" }
          : { status: "pending", nextAttemptAt: new Date(finishedAt.getTime() + delay).toISOString() };
    }
    const held = await ctx.store.transaction((tx) =>
      completeCallbackAttempt(tx, {
        eventId: event.id,
        token,
        attempt: {
          startedAt: startedAt.toISOString(),
          durationMs: answer.durationMs,
          statusCode: answer.statusCode,
          error: answer.error,
          responseBody: answer.responseBody,
        },
        outcome,
        now: finishedAt.toISOString(),
      }),
    );
    ctx.metrics.callbackAttempts.inc({
      outcome:
        outcome.status === "delivered" ? "delivered" : outcome.status === "failed" ? "failed" : "retry_scheduled",
    });
    const fields = {
      worker: "callbacks",
      eventId: event.id,
      subjectId: event.subjectId,
      statusCode: answer.statusCode,
    };
    if (!held)
      log.warn(
        fields,
        "callback claim expired during the attempt; the attempt is recorded, the event left to its new claim",
      );
    else if (outcome.status === "failed") log.warn({ ...fields, error: answer.error }, "callback failed for good");
    else if (outcome.status === "pending")
      log.info({ ...fields, error: answer.error }, "callback attempt failed; retry scheduled");
  };

  const track = (event: CallbackEvent, token: string): Promise<void> => {
    perDestination.set(event.destination, (perDestination.get(event.destination) ?? 0) + 1);
    perMerchant.set(event.merchantId, (perMerchant.get(event.merchantId) ?? 0) + 1);
    const running = attempt(event, token)
      .catch((error: unknown) => {
        // The claim stays until its lease ends, then the event is due again: nothing is lost.
        log.error({ err: error, worker: "callbacks", eventId: event.id }, "callback attempt could not be completed");
      })
      .finally(() => {
        inFlight.delete(event.id);
        const left = (perDestination.get(event.destination) ?? 1) - 1;
        if (left > 0) perDestination.set(event.destination, left);
        else perDestination.delete(event.destination);
        const merchantLeft = (perMerchant.get(event.merchantId) ?? 1) - 1;
        if (merchantLeft > 0) perMerchant.set(event.merchantId, merchantLeft);
        else perMerchant.delete(event.merchantId);
        // A finished attempt frees a slot and may unblock the next event of its invoice or request.
        schedule(0);
      });
    inFlight.set(event.id, running);
    return running;
  };

  /** Claims as many due events as there are free slots and starts them; answers the attempts it started. */
  const claimAndStart = async (): Promise<Promise<void>[]> => {
    if (stopped) return [];
    const free = maxInFlight - inFlight.size;
    if (free <= 0) return [];
    const full = [...perDestination].filter(([, n]) => n >= maxPerDestination).map(([d]) => d);
    const now = clock();
    const token = randomUUID();
    const claimed = await ctx.store.transaction((tx) =>
      claimDueCallbacks(tx, {
        now: now.toISOString(),
        leaseUntil: new Date(now.getTime() + leaseMs).toISOString(),
        token,
        limit: free,
        excludeDestinations: full,
        excludeMerchants: [...perMerchant].filter(([, n]) => n >= maxPerMerchant).map(([m]) => m),
        busyMerchants: [...perMerchant.keys()],
        perMerchant: maxPerMerchant,
        perDestination: maxPerDestination,
      }),
    );
    const started: Promise<void>[] = [];
    const giveBack: string[] = [];
    for (const event of claimed) {
      if (
        (perDestination.get(event.destination) ?? 0) >= maxPerDestination ||
        (perMerchant.get(event.merchantId) ?? 0) >= maxPerMerchant
      )
        giveBack.push(event.id);
      else started.push(track(event, token));
    }
    if (giveBack.length > 0) await ctx.store.transaction((tx) => releaseCallbackClaims(tx, giveBack, token));
    return started;
  };

  const claimOnce = (): Promise<Promise<void>[]> => {
    const next = claiming.then(claimAndStart);
    claiming = next.catch(() => undefined);
    return next;
  };

  const tick = async () => {
    timer = null;
    if (stopped) return;
    try {
      await claimOnce();
    } catch (error) {
      log.error({ err: error, worker: "callbacks" }, "claiming callbacks failed");
    }
    schedule(pollMs);
  };

  function schedule(delayMs: number): void {
    if (!autoStart || stopped) return;
    if (timer) {
      if (delayMs > 0) return;
      clearTimeout(timer);
    }
    timer = setTimeout(tick, delayMs);
  }

  schedule(pollMs);

  return {
    /** Claims once and waits for the attempts it started; answers how many. */
    runOnce: async () => {
      const started = await claimOnce();
      await Promise.all(started);
      return started.length;
    },
    stop: async () => {
      stopped = true;
      if (timer) clearTimeout(timer);
      await claiming;
      // In-flight attempts end within their timeout; waiting for them records their outcome.
      await Promise.all(inFlight.values());
    },
  };
}
