/**
 * What this replica admitted from memory while Redis could not decide, per subject, until it is
 * folded into Redis (fallback-store.ts). One sliding-window counter per window (the memory
 * store's bucket math), so that after an outage longer than a window the fold counts in that
 * window only what still lies in it. Bounded like the memory store: a subject is dropped once
 * all its admissions have left every window, and at most `maxSubjects` are kept (the least
 * recently admitted dropped first: Redis never learns of those).
 */
import type { WindowLimit } from "./limiter.ts";
import { WindowCounter } from "./sliding-window.ts";
import type { Clock } from "../../lib/clock.ts";

/** A subject's admissions still counting now: `counts[i]` in `windows[i]`. */
export interface Unfolded {
  windows: readonly WindowLimit[];
  counts: number[];
}

export interface FoldLedger {
  /** Counts one admission of `subject` from memory, now. */
  add(subject: string, windows: readonly WindowLimit[]): void;
  /** Counts back, as admitted now, what a fold that did not run was to carry. */
  restore(subject: string, unfolded: Unfolded): void;
  /** Removes the subject and returns what it still counts; undefined when nothing. */
  take(subject: string): Unfolded | undefined;
  has(subject: string): boolean;
  subjects(): string[];
  size(): number;
}

interface Entry {
  windows: readonly WindowLimit[];
  counters: Map<number, WindowCounter>;
}

/** Expired subjects examined (at the LRU end) per admission, as in the memory store. */
const SWEEP_PER_ADD = 2;

export function createFoldLedger(opts: { clock: Clock; maxSubjects: number }): FoldLedger {
  const { clock, maxSubjects } = opts;
  // Insertion order is admission order: re-inserting on every admission makes it an LRU list.
  const entries = new Map<string, Entry>();

  const expired = (e: Entry, nowMs: number) => [...e.counters.values()].every((c) => c.expiresAt(nowMs) <= nowMs);

  function count(subject: string, windows: readonly WindowLimit[], n: (i: number) => number): void {
    const nowMs = clock();
    const entry = entries.get(subject) ?? { windows, counters: new Map() };
    entry.windows = windows;
    entries.delete(subject);
    entries.set(subject, entry);
    windows.forEach((w, i) => {
      let counter = entry.counters.get(w.windowSeconds);
      if (!counter) entry.counters.set(w.windowSeconds, (counter = WindowCounter.forWindow(w.windowSeconds)));
      if (n(i) > 0) counter.add(nowMs, n(i));
    });
    let examined = 0;
    for (const [s, e] of entries) {
      if (entries.size > maxSubjects || (examined++ < SWEEP_PER_ADD && expired(e, nowMs))) entries.delete(s);
      else break;
    }
  }

  return {
    add: (subject, windows) => count(subject, windows, () => 1),
    restore(subject, { windows, counts }) {
      if (counts.some((n) => n > 0)) count(subject, windows, (i) => counts[i] ?? 0);
    },
    take(subject) {
      const entry = entries.get(subject);
      if (!entry) return undefined;
      entries.delete(subject);
      const nowMs = clock();
      const counts = entry.windows.map((w) => {
        const counter = entry.counters.get(w.windowSeconds);
        counter?.expire(nowMs);
        return counter?.total ?? 0;
      });
      return counts.some((n) => n > 0) ? { windows: entry.windows, counts } : undefined;
    },
    has: (subject) => entries.has(subject),
    subjects: () => [...entries.keys()],
    size: () => entries.size,
  };
}
