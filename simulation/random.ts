// The simulation's only source of chance: a seeded generator (pure-rand's xoroshiro128+), so one seed is one run.
import { uniformInt } from "pure-rand/distribution/uniformInt";
import { xoroshiro128plus } from "pure-rand/generator/xoroshiro128plus";

export class Random {
  readonly #rng: ReturnType<typeof xoroshiro128plus>;

  constructor(seed: number) {
    this.#rng = xoroshiro128plus(seed | 0);
  }

  /** An integer in [from, to]. */
  int(from: number, to: number): number {
    return uniformInt(this.#rng, from, to);
  }

  /** True with probability `p` (0..1), in steps of 1/10000. */
  chance(p: number): boolean {
    return this.int(0, 9999) < Math.round(p * 10000);
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error("pick from nothing");
    return items[this.int(0, items.length - 1)] as T;
  }

  /** A 32-bit value (a child seed, or a step's own draw). */
  u32(): number {
    return this.#rng.next() >>> 0;
  }

  /** Bytes for a patched crypto.randomBytes. */
  fill(target: Uint8Array): Uint8Array {
    for (let i = 0; i < target.length; i += 4) {
      const word = this.u32();
      for (let b = 0; b < 4 && i + b < target.length; b++) target[i + b] = (word >>> (8 * b)) & 0xff;
    }
    return target;
  }

  /** A float in [0, 1) for a patched Math.random. */
  float(): number {
    return this.u32() / 2 ** 32;
  }
}
