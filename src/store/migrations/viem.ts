// viem for migrations 040–042, which read older rows' signed transactions: loaded only when such rows exist, so that a fresh or up-to-date store never loads it (docs/performance.md, "Memory").
type Viem = typeof import("viem");

let loaded: Viem | undefined;

/** Loads viem once; a migration calls it before reading any signed transaction. */
export async function loadViem(): Promise<void> {
  loaded ??= await import("viem");
}

/** viem, once `loadViem` has run (a programming error otherwise). */
export function viem(): Viem {
  if (loaded === undefined) throw new Error("migration bug: viem read before loadViem()");
  return loaded;
}
