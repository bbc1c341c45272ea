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
import { answerKeptFrom, type CallbackAnswer, type CallbackPost, postCallback } from "./callbackHttp.ts";
import { type Loop, startLoop, type WakeableLoop } from "./loop.ts";

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
  /** How an attempt is sent (default: HTTP, callbackHttp.ts); the simulation stands in the merchants' endpoints. */
  post?: (post: CallbackPost) => Promise<CallbackAnswer>;
  clock?: () => Date;
  random?: () => number;
}

export const CALLBACK_DEFAULTS = { maxInFlight: 16, maxPerDestination: 2, maxPerMerchant: 4, pollMs: 1000 } as const;

function isSuccess(answer: CallbackAnswer): boolean {
  return answer.error === null && answer.statusCode !== null && answer.statusCode >= 200 && answer.statusCode < 300;
}

/** The options with their defaults, as the worker uses them. */
interface Settings {
  timeoutMs: number;
  maxInFlight: number;
  maxPerDestination: number;
  maxPerMerchant: number;
  pollMs: number;
  leaseMs: number;
  lookup: ResolveHost;
  answerKept: (address: string) => boolean;
  post: (post: CallbackPost) => Promise<CallbackAnswer>;
  clock: () => Date;
  random: () => number;
  autoStart: boolean;
}

function settingsOf(options: CallbackWorkerOptions): Settings {
  const leaseMs = options.leaseMs ?? options.timeoutMs * 2 + 30_000;
  assert(leaseMs > options.timeoutMs, "the callback lease outlasts an attempt");
  return {
    timeoutMs: options.timeoutMs,
    maxInFlight: options.maxInFlight ?? CALLBACK_DEFAULTS.maxInFlight,
    maxPerDestination: options.maxPerDestination ?? CALLBACK_DEFAULTS.maxPerDestination,
    maxPerMerchant: options.maxPerMerchant ?? CALLBACK_DEFAULTS.maxPerMerchant,
    pollMs: options.pollMs ?? CALLBACK_DEFAULTS.pollMs,
    leaseMs,
    lookup: options.lookup ?? systemResolveHost,
    answerKept: options.answerKept ?? answerKeptFrom,
    post: options.post ?? postCallback,
    clock: options.clock ?? (() => new Date()),
    random: options.random ?? Math.random,
    autoStart: options.autoStart ?? true,
  };
}

/** Resolves, signs and posts one event; throws only when something needed for the request is broken. */
async function send(
  ctx: ServiceContext,
  settings: Settings,
  event: CallbackEvent,
): Promise<{ answer: CallbackAnswer; permanent: boolean }> {
  const { clock, timeoutMs } = settings;
  const began = performance.now();
  const destination = await resolveCallbackDestination(event.url, ctx.config.serviceMode, settings.lookup, timeoutMs);
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
  const answer = await settings.post({
    destination: destination.value,
    body: event.body,
    headers: {
      "content-type": "application/json",
      "user-agent": CALLBACK_USER_AGENT,
      "webhook-id": event.id,
      "webhook-timestamp": String(timestamp),
      "webhook-signature": callbackSignatureHeader(signingSecrets(secrets, clock()), event.id, timestamp, event.body),
    },
    timeoutMs: Math.max(1, timeoutMs - Math.round(performance.now() - began)),
    keepAnswer: settings.answerKept(destination.value.address.address),
  });
  return { answer, permanent: false };
}

/** Sends one event, turning a request that cannot be built into a failed attempt; the store being down still throws. */
async function sendOrFail(
  ctx: ServiceContext,
  settings: Settings,
  event: CallbackEvent,
): Promise<{ answer: CallbackAnswer; permanent: boolean }> {
  const began = performance.now();
  const elapsed = () => Math.round(performance.now() - began);
  try {
    const built = await send(ctx, settings, event);
    return { answer: { ...built.answer, durationMs: elapsed() }, permanent: built.permanent };
  } catch (error) {
    // The store being down is not the merchant's failure: the claim lapses and the event comes back.
    if (isStoreUnavailable(error)) throw error;
    // Anything else that stops a request being built (a secret that cannot be opened, a URL an
    // older release accepted) is a failed attempt on the normal schedule, recorded like the rest,
    // never a claim that lapses silently again and again.
    const answer = {
      statusCode: null,
      error: `the request could not be made: ${(error as Error).message ?? String(error)}`.slice(0, 500),
      responseBody: null,
      durationMs: elapsed(),
    };
    return { answer, permanent: false };
  }
}

/** What an attempt's answer means for its event: delivered, failed for good, or due again after the schedule's delay. */
function outcomeOf(
  answer: CallbackAnswer,
  permanent: boolean,
  event: CallbackEvent,
  finishedAt: Date,
  random: () => number,
): AttemptOutcome {
  if (isSuccess(answer)) return { status: "delivered" };
  const delay = permanent ? null : callbackRetryDelayMs(event.schedulePosition + 1, random);
  return delay === null
    ? { status: "failed" }
    : { status: "pending", nextAttemptAt: new Date(finishedAt.getTime() + delay).toISOString() };
}

/** One attempt of one claimed event, from resolving its host to recording the outcome. */
async function attempt(
  ctx: ServiceContext,
  log: FastifyBaseLogger,
  settings: Settings,
  event: CallbackEvent,
  token: string,
): Promise<void> {
  const startedAt = settings.clock();
  const { answer, permanent } = await sendOrFail(ctx, settings, event);
  const finishedAt = settings.clock();
  const outcome = outcomeOf(answer, permanent, event, finishedAt, settings.random);
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
    outcome: outcome.status === "delivered" ? "delivered" : outcome.status === "failed" ? "failed" : "retry_scheduled",
  });
  const fields = { worker: "callbacks", eventId: event.id, subjectId: event.subjectId, statusCode: answer.statusCode };
  if (!held)
    log.warn(
      fields,
      "callback claim expired during the attempt; the attempt is recorded, the event left to its new claim",
    );
  else if (outcome.status === "failed") log.warn({ ...fields, error: answer.error }, "callback failed for good");
  else if (outcome.status === "pending")
    log.info({ ...fields, error: answer.error }, "callback attempt failed; retry scheduled");
}

/** The attempts in flight in this process, counted per destination and per merchant for the bounds. */
class InFlight {
  readonly attempts = new Map<string, Promise<void>>();
  readonly perDestination = new Map<string, number>();
  readonly perMerchant = new Map<string, number>();

  add(event: CallbackEvent, running: Promise<void>): void {
    this.attempts.set(event.id, running);
    this.perDestination.set(event.destination, (this.perDestination.get(event.destination) ?? 0) + 1);
    this.perMerchant.set(event.merchantId, (this.perMerchant.get(event.merchantId) ?? 0) + 1);
  }

  remove(event: CallbackEvent): void {
    this.attempts.delete(event.id);
    decrement(this.perDestination, event.destination);
    decrement(this.perMerchant, event.merchantId);
  }

  full(counts: Map<string, number>, bound: number): string[] {
    return [...counts].filter(([, n]) => n >= bound).map(([key]) => key);
  }
}

function decrement(counts: Map<string, number>, key: string): void {
  const left = (counts.get(key) ?? 1) - 1;
  if (left > 0) counts.set(key, left);
  else counts.delete(key);
}

/** Claims as many due events as there are free slots and starts them; answers the attempts it started. */
async function claimAndStart(
  ctx: ServiceContext,
  settings: Settings,
  flight: InFlight,
  start: (event: CallbackEvent, token: string) => Promise<void>,
): Promise<Promise<void>[]> {
  const free = settings.maxInFlight - flight.attempts.size;
  if (free <= 0) return [];
  const { maxPerDestination, maxPerMerchant } = settings;
  const now = settings.clock();
  const token = randomUUID();
  const claimed = await ctx.store.transaction((tx) =>
    claimDueCallbacks(tx, {
      now: now.toISOString(),
      leaseUntil: new Date(now.getTime() + settings.leaseMs).toISOString(),
      token,
      limit: free,
      excludeDestinations: flight.full(flight.perDestination, maxPerDestination),
      excludeMerchants: flight.full(flight.perMerchant, maxPerMerchant),
      busyMerchants: [...flight.perMerchant.keys()],
      perMerchant: maxPerMerchant,
      perDestination: maxPerDestination,
    }),
  );
  const started: Promise<void>[] = [];
  const giveBack: string[] = [];
  for (const event of claimed) {
    if (
      (flight.perDestination.get(event.destination) ?? 0) >= maxPerDestination ||
      (flight.perMerchant.get(event.merchantId) ?? 0) >= maxPerMerchant
    )
      giveBack.push(event.id);
    else started.push(start(event, token));
  }
  if (giveBack.length > 0) await ctx.store.transaction((tx) => releaseCallbackClaims(tx, giveBack, token));
  return started;
}

/**
 * The callback worker runs on the shared loop (loop.ts): each batch claims what the free slots
 * allow and starts those attempts without waiting for them, so a slow endpoint holds only its own
 * slots; a finished attempt wakes the loop, since it freed a slot and may unblock the next event of
 * its invoice or request. Claims run one at a time in a process (the loop's batches never overlap),
 * so the in-flight counts they rely on are exact.
 */
export function startCallbackWorker(ctx: ServiceContext, log: FastifyBaseLogger, options: CallbackWorkerOptions): Loop {
  const settings = settingsOf(options);
  const flight = new InFlight();
  let stopped = false;
  let lastStarted: Promise<void>[] = [];
  const start = (event: CallbackEvent, token: string): Promise<void> => {
    const running = attempt(ctx, log, settings, event, token)
      .catch((error: unknown) => {
        // The claim stays until its lease ends, then the event is due again: nothing is lost.
        log.error({ err: error, worker: "callbacks", eventId: event.id }, "callback attempt could not be completed");
      })
      .finally(() => {
        flight.remove(event);
        loop.wake();
      });
    flight.add(event, running);
    return running;
  };
  const loop: WakeableLoop = startLoop({
    name: "callbacks",
    idleMs: settings.pollMs,
    autoStart: settings.autoStart,
    log,
    runBatch: async () => {
      lastStarted = stopped ? [] : await claimAndStart(ctx, settings, flight, start);
      return lastStarted.length;
    },
  });
  return {
    /** Claims once and waits for the attempts it started; answers how many. */
    runOnce: async () => {
      const count = await loop.runOnce();
      await Promise.all(lastStarted);
      return count;
    },
    stop: async () => {
      stopped = true;
      await loop.stop();
      // In-flight attempts end within their timeout; waiting for them records their outcome.
      await Promise.all(flight.attempts.values());
    },
  };
}
