// PostgreSQL group commit for hot writes: one batch statement in flight per process and kind, the requests that arrive meanwhile going together in the next one.
/**
 * Why: every statement is a round trip and every commit a WAL flush, and a write the service
 * cannot avoid (an invoice, a withdrawal) costs the database more per statement than per row.
 * Requests that arrive while a batch is in flight wait for it anyway (the pool and the server's
 * CPU are shared), so they go together in the next statement: one round trip, one commit. A
 * request never waits for a timer: a batch leaves as soon as the previous one is answered, and an
 * idle process sends a lone request at once.
 */
export class StatementBatches<Item, Outcome> {
  readonly #queue: { item: Item; resolve: (outcome: Outcome) => void; reject: (error: unknown) => void }[] = [];
  #inFlight = false;

  constructor(
    private readonly limits: { batchSize: number; queueLimit: number },
    /** Writes one batch as one statement; answers each item's outcome in the order given. */
    private readonly write: (items: Item[]) => Promise<Outcome[]>,
  ) {}

  /** The item's outcome once its batch is answered; null when the queue is full (the caller writes it alone). */
  submit(item: Item): Promise<Outcome> | null {
    if (this.#queue.length >= this.limits.queueLimit) return null;
    return new Promise((resolve, reject) => {
      this.#queue.push({ item, resolve, reject });
      if (!this.#inFlight) void this.#drain();
    });
  }

  async #drain(): Promise<void> {
    this.#inFlight = true;
    while (this.#queue.length > 0) {
      const batch = this.#queue.splice(0, this.limits.batchSize);
      try {
        const outcomes = await this.write(batch.map((w) => w.item));
        batch.forEach((w, i) => {
          w.resolve(outcomes[i] as Outcome);
        });
      } catch (error) {
        for (const w of batch) w.reject(error);
      }
    }
    this.#inFlight = false;
  }
}

/** One batcher per store handle (a test may open several stores in one process). */
export function batchesPer<Key extends object, Item, Outcome>(
  make: (key: Key) => StatementBatches<Item, Outcome>,
): (key: Key) => StatementBatches<Item, Outcome> {
  const made = new WeakMap<Key, StatementBatches<Item, Outcome>>();
  return (key) => {
    let batches = made.get(key);
    if (!batches) {
      batches = make(key);
      made.set(key, batches);
    }
    return batches;
  };
}
