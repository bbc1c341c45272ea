// What `payments listen` has seen: a look-back window before the newest event, and each id forwarded once.
import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { EventWatermark, LISTEN_LOOKBACK_MS, pause } from "../../src/commands.ts";

describe("pause between polls", () => {
  it("leaves no abort listener behind on the signal, so no listener-leak warning comes after ten polls", async () => {
    const controller = new AbortController();
    for (let i = 0; i < 12; i++) await pause(1, controller.signal);
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });

  it("ends at once when the signal aborts", async () => {
    const controller = new AbortController();
    const waiting = pause(3_600_000, controller.signal);
    controller.abort();
    await waiting;
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
  });
});

describe("EventWatermark", () => {
  it("asks for everything until an event is seen, then for the look-back window before the newest", () => {
    const mark = new EventWatermark();
    expect(mark.since()).toBeUndefined();
    expect(mark.add({ id: "evt_b", created_at: "2026-01-01T00:10:00.000Z" })).toBe(true);
    expect(mark.add({ id: "evt_a", created_at: "2026-01-01T00:05:00.000Z" })).toBe(true);
    expect(mark.since()).toBe(new Date(Date.parse("2026-01-01T00:10:00.000Z") - LISTEN_LOOKBACK_MS).toISOString());
  });

  it("refuses an id seen before, also one that committed late with an older created_at", () => {
    const mark = new EventWatermark();
    mark.add({ id: "evt_new", created_at: "2026-01-01T00:10:00.000Z" });
    expect(mark.add({ id: "evt_new", created_at: "2026-01-01T00:10:00.000Z" })).toBe(false);
    // Committed after evt_new but created 30 s before it: still inside the window, forwarded once.
    expect(mark.add({ id: "evt_late", created_at: "2026-01-01T00:09:30.000Z" })).toBe(true);
    expect(mark.add({ id: "evt_late", created_at: "2026-01-01T00:09:30.000Z" })).toBe(false);
  });

  it("forgets ids older than the window, which no poll lists any more", () => {
    const mark = new EventWatermark();
    mark.add({ id: "evt_old", created_at: "2026-01-01T00:00:00.000Z" });
    mark.add({ id: "evt_new", created_at: "2026-01-01T00:10:00.000Z" });
    mark.prune();
    // Forgotten: a poll from since() cannot list it, so this only shows it is no longer kept.
    expect(mark.add({ id: "evt_old", created_at: "2026-01-01T00:00:00.000Z" })).toBe(true);
    expect(mark.add({ id: "evt_new", created_at: "2026-01-01T00:10:00.000Z" })).toBe(false);
  });
});
