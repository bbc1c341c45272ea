// Screening (product §21): how addresses are compared, how a list file reads, how the sources' answers combine, and the retry rules; pure, no I/O.
import { err, ok, type Result } from "./result.ts";

/** What one source, or all of them together, says of an address. */
export type ScreeningVerdict = "clear" | "listed" | "unavailable";

/** Entries a list may hold: a bigger file is refused and the last good list kept. */
export const MAX_LIST_ENTRIES = 1_000_000;
/** Problems a rejected list reports (the rest are counted). */
export const MAX_LIST_PROBLEMS_SHOWN = 20;

const EVM = /^0x[0-9a-fA-F]{40}$/;
/** Other chains' addresses (base58, bech32, …): letters and digits only, of plausible length. */
const OTHER = /^[A-Za-z0-9]{20,100}$/;

/** The form an address is compared in: EVM addresses without case (their case is only a checksum), others as written. */
export function screeningKey(address: string): string {
  const text = address.trim();
  return EVM.test(text) ? text.toLowerCase() : text;
}

export interface ListProblem {
  readonly line: number;
  readonly detail: string;
}

export interface ParsedList {
  readonly addresses: ReadonlySet<string>;
  readonly format: "plain" | "ofac_sdn_csv";
}

export interface RejectedList {
  readonly problems: readonly ListProblem[];
  readonly problemCount: number;
}

/** The OFAC SDN CSV names its crypto addresses in the remarks: `Digital Currency Address - ETH 0x…;`. */
const OFAC_ADDRESS = /Digital Currency Address - ([A-Za-z0-9]+)\s+([A-Za-z0-9]+)/g;

/**
 * A list file's addresses. The OFAC SDN CSV (recognised by its "Digital Currency Address" remarks)
 * gives every digital currency address it names; otherwise one address per line, `#` starting a
 * comment. Any malformed line rejects the whole file: a half-read list could let a listed
 * address through, so the caller keeps its last good list.
 */
export function parseScreeningList(text: string): Result<ParsedList, "list_rejected"> & { rejected?: RejectedList } {
  if (text.includes("Digital Currency Address")) return parseOfac(text);
  const addresses = new Set<string>();
  const problems: ListProblem[] = [];
  let problemCount = 0;
  const lines = text.split(/\r?\n/);
  for (const [i, raw] of lines.entries()) {
    const entry = (raw.split("#", 1)[0] ?? "").trim();
    if (entry === "") continue;
    if (!EVM.test(entry) && !OTHER.test(entry)) {
      problemCount++;
      if (problems.length < MAX_LIST_PROBLEMS_SHOWN) {
        problems.push({ line: i + 1, detail: `not an address: ${JSON.stringify(entry.slice(0, 60))}` });
      }
      continue;
    }
    addresses.add(screeningKey(entry));
    if (addresses.size > MAX_LIST_ENTRIES) return tooMany();
  }
  if (problemCount > 0) return rejected({ problems, problemCount });
  return ok({ addresses, format: "plain" });
}

function parseOfac(text: string) {
  const addresses = new Set<string>();
  for (const match of text.matchAll(OFAC_ADDRESS)) {
    addresses.add(screeningKey(match[2] as string));
    if (addresses.size > MAX_LIST_ENTRIES) return tooMany();
  }
  return ok({ addresses, format: "ofac_sdn_csv" as const });
}

function rejected(r: RejectedList) {
  const detail = r.problems.map((p) => `line ${p.line}: ${p.detail}`).join("; ");
  return { ...err("list_rejected" as const, `${r.problemCount} malformed line(s): ${detail}`), rejected: r };
}

function tooMany() {
  const problem = { line: 0, detail: `more than ${MAX_LIST_ENTRIES} addresses` };
  return rejected({ problems: [problem], problemCount: 1 });
}

/**
 * The provider's answer (the Chainalysis sanctions API's shape): `{ "identifications": [...] }`,
 * listed when non-empty. Anything else is no answer at all: the address stays unscreened.
 */
export function providerVerdict(body: unknown): ScreeningVerdict {
  if (typeof body !== "object" || body === null) return "unavailable";
  const identifications = (body as { identifications?: unknown }).identifications;
  if (!Array.isArray(identifications)) return "unavailable";
  return identifications.length > 0 ? "listed" : "clear";
}

/** All sources together: one that lists the address wins; else one that could not answer leaves it unscreened. */
export function combineVerdicts(verdicts: readonly ScreeningVerdict[]): ScreeningVerdict {
  if (verdicts.includes("listed")) return "listed";
  if (verdicts.includes("unavailable")) return "unavailable";
  return "clear";
}

/** The sandbox's simulated flag (product §10) is one more source. */
export function simulatedVerdict(flagged: boolean): ScreeningVerdict {
  return flagged ? "listed" : "clear";
}

export interface RetryRule {
  /** Delay before the second attempt; it doubles with each attempt. */
  readonly baseMs: number;
  readonly capMs: number;
  /** Attempts before an unscreened payment goes to the operator (aml_check). */
  readonly maxAttempts: number;
}

export type AfterUnavailable = { readonly kind: "retry"; readonly delayMs: number } | { readonly kind: "flag" };

/** What becomes of a payment whose `attempts`-th screening found no answer: tried again later, or flagged for the operator. */
export function afterUnavailable(attempts: number, rule: RetryRule): AfterUnavailable {
  if (attempts >= rule.maxAttempts) return { kind: "flag" };
  const delay = rule.baseMs * 2 ** Math.min(Math.max(attempts - 1, 0), 30);
  return { kind: "retry", delayMs: Math.min(delay, rule.capMs) };
}

/** The reason stored on a payment flagged by screening. */
export type ScreeningReason = "listed" | "screening_unavailable";

/** The list file's state, for the operator (GET /admin/v1/screening, /metrics). */
export interface ListStatus {
  readonly path: string;
  readonly entries: number;
  readonly format: ParsedList["format"] | null;
  /** When the list in use was loaded (null: no good list yet). */
  readonly loadedAt: string | null;
  /** The file's modification time of the list in use. */
  readonly modifiedAt: string | null;
  /** Why the file's latest content was not taken (the last good list stays in use); null when it was. */
  readonly lastError: string | null;
}

/** A list source: answers from the last good list, rereading the file when it changed. */
export interface ScreeningListSource {
  check(address: string): Promise<ScreeningVerdict>;
  /** Rereads the file when it changed (check does too). */
  refresh(): Promise<void>;
  status(): ListStatus;
}

export interface ProviderStatus {
  readonly url: string;
  /** False after the latest call found no answer (timeout, error status, garbage). */
  readonly available: boolean;
  readonly lastAnswerAt: string | null;
  readonly lastFailureAt: string | null;
  readonly lastFailure: string | null;
  readonly cached: number;
}

/** A screening provider (the Chainalysis sanctions API's shape); definitive answers are cached. */
export interface ScreeningProviderSource {
  check(address: string): Promise<ScreeningVerdict>;
  /** The cached answer, without asking: null when none is cached. */
  cached(address: string): ScreeningVerdict | null;
  status(): ProviderStatus;
}

/** The configured sources; either may be absent. */
export interface ScreeningSources {
  readonly list: ScreeningListSource | null;
  readonly provider: ScreeningProviderSource | null;
}

/**
 * Why screening is off, or null when it is on: live mode with neither a list nor a provider credits
 * every payment unscreened, which an operator must know (logged at start, shown by GET /admin/v1/screening).
 */
export function screeningOffWarning(mode: "sandbox" | "live", sources: ScreeningSources): string | null {
  if (mode !== "live" || sources.list !== null || sources.provider !== null) return null;
  return "screening is off: no SCREENING_LIST and no SCREENING_PROVIDER_URL, so payments are credited and payouts sent without screening (docs/screening.md)";
}

/** Text shaped like an address of some chain (what a list line or a payout destination may be). */
export function looksLikeAddress(text: string): boolean {
  const t = text.trim();
  return EVM.test(t) || OTHER.test(t);
}
