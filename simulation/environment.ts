// The simulated process environment: a fake clock (Date and timers move only when the simulation moves them) and seeded randomness in place of the system's (the service draws from randomBytes, randomUUID and Math.random only).
import crypto from "node:crypto";
import { syncBuiltinESMExports } from "node:module";
import { withGlobal } from "@sinonjs/fake-timers";
import { Random } from "./random.ts";

/** The simulated clock starts here for every seed (a fixed instant: a seed's run never reads the wall clock). */
export const SIMULATION_EPOCH_MS = Date.UTC(2026, 0, 1);

/** The process's own timer, kept before the fake clock replaces it: real I/O is waited for with it. */
const realSetTimeout = globalThis.setTimeout;

/** Waits `ms` of real time, whatever the simulated clock does. */
export function realDelay(ms: number): Promise<void> {
  return new Promise((resolve) => realSetTimeout(resolve, ms));
}

const original = {
  randomBytes: crypto.randomBytes,
  randomUUID: crypto.randomUUID,
  randomFillSync: crypto.randomFillSync,
  mathRandom: Math.random,
};

type InstalledClock = ReturnType<ReturnType<typeof withGlobal>["install"]>;

export interface Environment {
  clock: InstalledClock;
  random: Random;
  /** Simulated milliseconds since the epoch. */
  nowMs(): number;
  uninstall(): void;
}

function uuidOf(random: Random): `${string}-${string}-${string}-${string}-${string}` {
  const b = random.fill(new Uint8Array(16));
  b[6] = ((b[6] ?? 0) & 0x0f) | 0x40;
  b[8] = ((b[8] ?? 0) & 0x3f) | 0x80;
  const h = Buffer.from(b).toString("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/**
 * Installs the seed's clock and randomness for this process (one seed at a time). Node's named
 * exports of node:crypto are synced, so modules that imported `randomBytes` by name draw from the
 * seed too.
 */
export function installEnvironment(seed: number): Environment {
  const random = new Random(seed ^ 0x5eed);
  const clock = withGlobal(globalThis).install({
    now: SIMULATION_EPOCH_MS,
    toFake: ["Date", "setTimeout", "clearTimeout", "setInterval", "clearInterval"],
  });
  const patched = crypto as unknown as Record<string, unknown>;
  patched.randomBytes = (size: number, callback?: (error: Error | null, bytes: Buffer) => void) => {
    const bytes = Buffer.from(random.fill(new Uint8Array(size)));
    if (callback) {
      callback(null, bytes);
      return undefined;
    }
    return bytes;
  };
  patched.randomUUID = () => uuidOf(random);
  patched.randomFillSync = <T extends NodeJS.ArrayBufferView>(target: T) => {
    random.fill(new Uint8Array(target.buffer, target.byteOffset, target.byteLength));
    return target;
  };
  Math.random = () => random.float();
  syncBuiltinESMExports();
  return {
    clock,
    random,
    nowMs: () => clock.now,
    uninstall: () => {
      clock.uninstall();
      Object.assign(patched, {
        randomBytes: original.randomBytes,
        randomUUID: original.randomUUID,
        randomFillSync: original.randomFillSync,
      });
      Math.random = original.mathRandom;
      syncBuiltinESMExports();
    },
  };
}
