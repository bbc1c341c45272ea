// What every route module receives: configuration, the store and the sealing key, built once at start.

import type { Config } from "../config.ts";
import type { CardProvider } from "../domain/cardProvider.ts";
import type { ChainClientPool, Wallet } from "../domain/chain.ts";
import type { HotWalletOutbox } from "../domain/hotTransaction.ts";
import type { ScreeningSources } from "../domain/screening.ts";
import type { ServiceMetrics } from "../metrics.ts";
import type { SecretBox } from "../store/secrets.ts";
import type { Store } from "../store/store.ts";
import type { RateService } from "./rates.ts";

export interface ServiceContext {
  readonly config: Config;
  readonly store: Store;
  readonly box: SecretBox;
  /** SHA-256 of the admin token, compared in constant time. */
  readonly adminTokenHash: string;
  /** This instance's metrics registry (GET /metrics), shared by the HTTP surface and the workers. */
  readonly metrics: ServiceMetrics;
  /** The HD wallet of WALLET_MNEMONIC, or null when it is not set (live mode then takes no crypto). */
  readonly wallet: Wallet | null;
  /** This process's clients of the configured networks' nodes. */
  readonly chains: ChainClientPool;
  /** The hot wallet's outbox (product §26): every transaction it signs goes through it. */
  readonly outbox: HotWalletOutbox;
  /** This process's rate lookups (product §22): feed reads shared between requests. */
  readonly rates: RateService;
  /** The card provider of CARD_PROVIDER (live fiat, product §20), or null when none is configured. */
  readonly cardProvider: CardProvider | null;
  /** Screening's sources (product §21): SCREENING_LIST and the provider; neither when none is configured. */
  readonly screening: ScreeningSources;
}
