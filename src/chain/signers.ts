// The hot wallet's remote signers, one per network (SIGNER_URL_<NETWORK>, else SIGNER_URL), all for SIGNER_ADDRESS: each remembers whether its last request was signed, for the payout worker's probes and payments_signer_up.
import type { FastifyBaseLogger } from "fastify";
import { type SignerConfig, signerUrlSuffix } from "../config.ts";
import { type Signer, SignerError, type SignerErrorCode, type SignerStates } from "../domain/chain.ts";
import type { ServiceMetrics } from "../metrics.ts";
import { probeSigner, remoteSigner, signerChainId } from "./remoteSigner.ts";

/**
 * The codes of a signer that is not there (no connection, no answer in time): the start goes on
 * without it and its network's payouts wait. Any other failure at start (another address, no key,
 * another transaction, garbage) is a misconfiguration and stops the start.
 */
export const SIGNER_DOWN_CODES: readonly SignerErrorCode[] = ["signer_unreachable", "signer_timeout"];

type SignerLog = Pick<FastifyBaseLogger, "info" | "warn">;

interface State {
  up: boolean;
  code: SignerErrorCode | null;
}

/** Every network's signer, made at its first use, tracking its last outcome. */
export class RemoteSigners implements SignerStates {
  readonly #config: SignerConfig;
  readonly #signers = new Map<string, Signer>();
  readonly #states = new Map<string, State>();
  /** Probes in flight, so a slow signer is never asked twice at once by the worker. */
  readonly #probing = new Set<string>();
  readonly #log: SignerLog | null;

  constructor(config: SignerConfig, log: SignerLog | null = null) {
    this.#config = config;
    this.#log = log;
  }

  /** Which variable names a network's signer: never its URL (it may hold credentials). */
  variableOf(network: string): string {
    const suffix = signerUrlSuffix(network);
    return this.#config.networkUrls.has(suffix) ? `SIGNER_URL_${suffix}` : "SIGNER_URL";
  }

  /** The network's signer: its own SIGNER_URL_<NETWORK>, else SIGNER_URL; always for SIGNER_ADDRESS. */
  for(network: string): Signer {
    const known = this.#signers.get(network);
    if (known !== undefined) return known;
    const url = this.#config.networkUrls.get(signerUrlSuffix(network)) ?? this.#config.url;
    const inner = remoteSigner({ url: url.reveal(), address: this.#config.address, timeoutMs: this.#config.timeoutMs });
    const signer: Signer = {
      address: inner.address,
      signTransaction: async (tx) => {
        try {
          const signed = await inner.signTransaction(tx);
          this.#record(network, { up: true, code: null });
          return signed;
        } catch (error) {
          if (error instanceof SignerError) this.#record(network, { up: false, code: error.code });
          throw error;
        }
      },
    };
    this.#signers.set(network, signer);
    return signer;
  }

  states(): ReadonlyMap<string, State> {
    return this.#states;
  }

  /** The chain SIGNER_URL says it is bound to, or null: what the start probes before any network is configured. */
  defaultChainId(): Promise<number | null> {
    const { url, address, timeoutMs } = this.#config;
    return signerChainId({ url: url.reveal(), address, timeoutMs });
  }

  /** Signs the probe on the network's chain (nothing is broadcast); answers the failure, or null. */
  async probe(network: string, chainId: number): Promise<SignerError | null> {
    try {
      await probeSigner(this.for(network), chainId);
      return null;
    } catch (error) {
      if (error instanceof SignerError) return error;
      throw error;
    }
  }

  async probeDown(networks: readonly { name: string; chainId: number }[]): Promise<void> {
    const down = networks.filter((n) => this.#states.get(n.name)?.up === false && !this.#probing.has(n.name));
    await Promise.all(
      down.map(async (n) => {
        this.#probing.add(n.name);
        try {
          await this.probe(n.name, n.chainId);
        } finally {
          this.#probing.delete(n.name);
        }
      }),
    );
  }

  /** Keeps the outcome; a change is logged once (the code, the variable, never the URL). */
  #record(network: string, state: State): void {
    const before = this.#states.get(network);
    this.#states.set(network, state);
    if (before?.up === state.up || this.#log === null) return;
    const variable = this.variableOf(network);
    if (state.up) {
      if (before !== undefined)
        this.#log.info({ network, signer: variable }, "signer: signing again; the network's payouts go");
    } else
      this.#log.warn(
        { network, signer: variable, code: state.code },
        "signer: the network's signer does not sign; its payouts wait (payments_signer_up 0)",
      );
  }
}

/**
 * payments_signer_up{network}: 1 while the network's signer signs, 0 once it did not (down, slow,
 * refusing, another key); the payout worker probes a 0 again at every batch. Networks whose signer
 * was not asked yet have no series (the start asks every configured network's).
 */
export function registerSignerGauge(metrics: ServiceMetrics, signers: SignerStates): void {
  const up = metrics.gauge({
    name: "signer_up",
    help: "1 when the network's remote signer signed its last request (a payout, or the probe), 0 when it did not: the network's payouts wait (docs/signer.md).",
    labelNames: ["network"],
  });
  metrics.onScrape("signer_up", () => {
    up.reset();
    for (const [network, state] of signers.states()) if (network !== "") up.set({ network }, state.up ? 1 : 0);
  });
}
