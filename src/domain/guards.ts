// The money rails' switchable guards (issue 44): each one a check whose removal is a real bug, switched off one at a time by the simulation's runner (`--mutant NAME`) to show the simulation catches it.
/**
 * Every switchable guard and what it protects. The code reads each at its one site, the
 * simulation lists them (`--list-mutants`) and its test asserts each is caught.
 */
export const GUARDS = {
  "payout-settlement-cas":
    "a payout settles only from the state its settler expected (src/store/payouts.ts settlePayout): a settler working from a stale read cannot fail a payout another process has sent meanwhile, crediting back money that also leaves",
  "lease-token":
    "a scan, flush or sweep batch writes only while its process still holds the network: the scanner lease's token (src/store/networks.ts fenceScanLease) and, for a scan batch, the checkpoint the pass read (src/chain/scanner.ts expectCheckpoint), the two halves of one fence: a paused process whose lease was taken over, or whose position another pass moved, writes nothing",
  "confirmation-depth":
    "a chain payment counts only once it is the network's confirmations deep (src/chain/scanner.ts): a payment a reorganisation can still undo is never credited",
  "reorg-rewind":
    "the scanner compares the blocks it stored with the node's chain and rewinds to the fork (src/chain/scanner.ts): payments of blocks reorganised away are dropped, those of the new blocks recorded",
  "nonce-reservation":
    "a new hot-wallet transaction takes the next nonce reserved in the store, never below the chain's pending count (src/store/networks.ts takeHotNonce): two transactions never share a nonce",
} as const;

export type GuardName = keyof typeof GUARDS;

export const GUARD_NAMES = Object.keys(GUARDS) as readonly GuardName[];

export function isGuardName(name: string): name is GuardName {
  return Object.hasOwn(GUARDS, name);
}

// Simulation-only switch: module state, so the guards' sites read it without a parameter on every
// path. The default, and the only state outside the simulation's runner, is every guard on.
let switchedOff: GuardName | null = null;

/** Whether a guard is on: always, unless the simulation's runner switched it off. Cheap (hot paths). */
export function guardOn(name: GuardName): boolean {
  return switchedOff !== name;
}

/** The simulation's runner only: switches off one guard (the mutant), or with null every guard back on. */
export function switchOffGuard(name: GuardName | null): void {
  switchedOff = name;
}
