// SQLite durability off the event loop: commits are written without fsync, and one fsync of the WAL, in libuv's pool, covers every commit made before it started.
import { statSync } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";
import { dirname } from "node:path";

/**
 * What the barrier needs from the world, injectable for tests: the version of the committed
 * state (SQLite's `data_version` read on a second connection, which changes whenever the writing
 * connection commits) and the fsync of everything written so far.
 */
export interface WalSyncIo {
  committedVersion(): number;
  sync(): Promise<void>;
}

/**
 * A durability barrier. `barrier()` answers null when everything committed so far is already on
 * disk (the common read-only case costs one pragma), else a promise of the first fsync that starts
 * after this call. At most one fsync runs at a time; commits made while it runs share the next one,
 * so the number of fsyncs per second is bounded by the disk, not by the number of requests.
 */
export class WalSync {
  readonly #io: WalSyncIo;
  /** The committed version that the last successful fsync covers. */
  #durableVersion: number;
  #running: { version: number; done: Promise<void> } | null = null;
  #queued: Promise<void> | null = null;
  /**
   * The first failed fsync, for good: after a failed fsync Linux may have dropped the dirty pages
   * and a later fsync can succeed without them, so nothing committed since can be called durable.
   */
  #failure: unknown = null;
  readonly #onFailure: (error: unknown) => void;

  constructor(io: WalSyncIo, onFailure: (error: unknown) => void = () => {}) {
    this.#io = io;
    this.#onFailure = onFailure;
    // What was committed before this process opened the store survived a restart or was recovered.
    this.#durableVersion = io.committedVersion();
  }

  barrier(): Promise<void> | null {
    if (this.#failure !== null) return Promise.reject(this.#failure);
    const version = this.#io.committedVersion();
    if (version === this.#durableVersion) return null;
    const running = this.#running;
    // Between a sync's end and the start of the one queued behind it, the queued one covers us.
    if (running === null) return this.#queued ?? this.#start(version);
    // The running fsync read the version when it started: it covers us only if nothing committed since.
    if (running.version === version) return running.done;
    if (this.#queued === null) {
      const after = running.done.catch(() => {});
      this.#queued = after.then(() => {
        this.#queued = null;
        if (this.#failure !== null) throw this.#failure;
        const latest = this.#io.committedVersion();
        return latest === this.#durableVersion ? undefined : this.#start(latest);
      });
    }
    return this.#queued;
  }

  /**
   * The fsync in progress, if any (the group committer keeps its next batch open meanwhile). Null
   * when another is already queued behind it: that one reads the committed version when it starts,
   * so it covers a commit made now, and waiting would only cost one more fsync.
   */
  inFlight(): Promise<void> | null {
    return this.#queued === null ? (this.#running?.done ?? null) : null;
  }

  #start(version: number): Promise<void> {
    const done = this.#io.sync().then(
      () => {
        this.#running = null;
        this.#durableVersion = version;
      },
      (error: unknown) => {
        // Nothing committed since the last good fsync is known to be on disk, now or later.
        this.#running = null;
        if (this.#failure === null) {
          this.#failure = error ?? new Error("fsync failed");
          this.#onFailure(this.#failure);
        }
        throw this.#failure;
      },
    );
    this.#running = { version, done };
    return done;
  }
}

/**
 * fdatasync of the WAL file through a descriptor of our own: on Linux an fsync flushes the file's
 * dirty pages whichever descriptor wrote them. The descriptor is reopened when the WAL file was
 * replaced, and the directory is synced once per opened WAL so the file's name is durable too.
 */
export function walFileSync(databasePath: string): { sync(): Promise<void>; close(): Promise<void> } {
  const walPath = `${databasePath}-wal`;
  let handle: FileHandle | null = null;
  let inode = -1;

  async function reopen(): Promise<FileHandle> {
    await handle?.close();
    handle = null;
    const opened = await open(walPath, "r");
    inode = (await opened.stat()).ino;
    const directory = await open(dirname(walPath), "r");
    try {
      await directory.sync();
    } finally {
      await directory.close();
    }
    handle = opened;
    return opened;
  }

  return {
    async sync() {
      // A synchronous stat (a microsecond) rather than one more round trip through the thread pool.
      const current = statSync(walPath).ino;
      const target = handle !== null && current === inode ? handle : await reopen();
      await target.datasync();
    },
    async close() {
      await handle?.close();
      handle = null;
    },
  };
}
