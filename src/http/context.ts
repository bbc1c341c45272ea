// What every route module receives: configuration, the store and the sealing key, built once at start.
import type { Config } from "../config.ts";
import type { ServiceMetrics } from "../metrics.ts";
import type { SecretBox } from "../store/secrets.ts";
import type { Store } from "../store/store.ts";

export interface ServiceContext {
  readonly config: Config;
  readonly store: Store;
  readonly box: SecretBox;
  /** SHA-256 of the admin token, compared in constant time. */
  readonly adminTokenHash: string;
  /** This instance's metrics registry (GET /metrics), shared by the HTTP surface and the workers. */
  readonly metrics: ServiceMetrics;
}
