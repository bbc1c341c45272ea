// The SCREENING_LIST file (product §21): read at start, reread when its size or modification time changes, a bad version refused and the last good list kept.
import { open, stat } from "node:fs/promises";
import {
  type ListStatus,
  type ParsedList,
  parseScreeningList,
  type ScreeningListSource,
  type ScreeningVerdict,
  screeningKey,
} from "../domain/screening.ts";

/** The biggest list file read (the OFAC SDN CSV is about 5 MiB): a bigger one is refused. */
export const MAX_LIST_BYTES = 64 * 1024 * 1024;

export interface ListLog {
  warn(fields: object, message: string): void;
  info(fields: object, message: string): void;
}

async function readBounded(path: string): Promise<string> {
  const handle = await open(path, "r");
  try {
    const buffer = Buffer.alloc(MAX_LIST_BYTES + 1);
    let length = 0;
    while (length <= MAX_LIST_BYTES) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > MAX_LIST_BYTES) throw new Error(`the file is larger than ${MAX_LIST_BYTES} bytes`);
    return buffer.subarray(0, length).toString("utf8");
  } finally {
    await handle.close();
  }
}

export class ScreeningListFile implements ScreeningListSource {
  #list: ParsedList | null = null;
  #loadedAt: string | null = null;
  #modifiedAt: string | null = null;
  /** The (size, mtime) last read, good or bad: an unchanged file is not read again. */
  #seen = "";
  #lastError: string | null = null;
  #reading: Promise<void> | null = null;

  constructor(
    readonly path: string,
    private readonly log: ListLog,
  ) {}

  /** Rereads the file when it changed since the last read; a failure keeps the last good list. */
  async refresh(): Promise<void> {
    // One read at a time: concurrent checks share it.
    this.#reading ??= this.#refresh().finally(() => {
      this.#reading = null;
    });
    return this.#reading;
  }

  async #refresh(): Promise<void> {
    let seen: string;
    let modifiedAt: string;
    try {
      const s = await stat(this.path);
      seen = `${s.size}:${s.mtimeMs}`;
      modifiedAt = s.mtime.toISOString();
    } catch (error) {
      this.#fail(`cannot read ${this.path}: ${(error as Error).message}`);
      return;
    }
    if (seen === this.#seen) return;
    this.#seen = seen;
    let parsed: ReturnType<typeof parseScreeningList>;
    try {
      parsed = parseScreeningList(await readBounded(this.path));
    } catch (error) {
      this.#fail(`cannot read ${this.path}: ${(error as Error).message}`);
      return;
    }
    if (!parsed.ok) {
      this.#fail(`${this.path} refused: ${parsed.detail}`);
      return;
    }
    this.#list = parsed.value;
    this.#loadedAt = new Date().toISOString();
    this.#modifiedAt = modifiedAt;
    this.#lastError = null;
    this.log.info({ path: this.path, entries: parsed.value.addresses.size }, "screening list loaded");
  }

  #fail(detail: string): void {
    this.#lastError = detail;
    this.log.warn({ path: this.path, kept: this.#list?.addresses.size ?? null }, `screening list: ${detail}`);
  }

  /** Listed or clear by the last good list; without any good list yet, no answer (the address stays unscreened). */
  async check(address: string): Promise<ScreeningVerdict> {
    await this.refresh();
    if (this.#list === null) return "unavailable";
    return this.#list.addresses.has(screeningKey(address)) ? "listed" : "clear";
  }

  status(): ListStatus {
    return {
      path: this.path,
      entries: this.#list?.addresses.size ?? 0,
      format: this.#list?.format ?? null,
      loadedAt: this.#loadedAt,
      modifiedAt: this.#modifiedAt,
      lastError: this.#lastError,
    };
  }
}
