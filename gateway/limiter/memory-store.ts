/**
 * The limiter in process memory: one gateway without REDIS_URL, and the fallback while Redis is
 * unreachable. Same algorithm and decisions as the Redis store (sliding-window.ts). Memory is
 * bounded: at most 61 buckets per window per subject, idle subjects are dropped once everything
 * they hold has expired, and at most `maxSubjects` subjects are kept (least recently used first out).
 */
import type { BanPolicy, Decision, LimiterStore, Outcome, WindowLimit } from "./limiter.ts";
import {
  assembleDecision,
  recordStrike,
  validateBanPolicy,
  validateWindows,
  WindowCounter,
  type BanState,
} from "./sliding-window.ts";
import type { Clock } from "../../lib/clock.ts";

export interface MemoryStoreOptions {
  ban: BanPolicy;
  clock: Clock;
  /** LRU bound on tracked subjects (default DEFAULT_MAX_SUBJECTS). */
  maxSubjects?: number;
}

export const DEFAULT_MAX_SUBJECTS = 100_000;

export interface MemoryStore extends LimiterStore {
  /**
   * Counts one request of `subject` in each window without deciding anything (no limit, ban or
   * revocation check): the fallback store records here what Redis admitted, so that during an
   * outage this replica's own earlier admissions count against its share.
   */
  record(subject: string, windows: readonly WindowLimit[]): void;
  /** Revokes a subject in this process (the Redis store reads the keys CLI's `revoked` key instead). */
  revoke(subject: string): void;
  /**
   * Every tracked subject whose name starts with `prefix`: its buckets per window length, ban end
   * and last admission (usage-file.ts publishes the API keys' for `keys usage`).
   */
  subjectsWith(prefix: string): Iterable<[string, SubjectUsage]>;
  /** Grows on every hit and record: whether anything changed since it was last read. */
  version(): number;
  /** Tracked subjects and buckets, for bounded-memory checks and metrics. */
  size(): { subjects: number; buckets: number };
  /** Buckets held for one subject (all windows). */
  bucketCount(subject: string): number;
}

interface SubjectState extends BanState {
  windows: Map<number, WindowCounter>;
  lastUsedMs?: number;
}

export interface SubjectUsage {
  /** Window length in seconds → its counted buckets, oldest first. */
  windows: ReadonlyMap<number, readonly { index: number; count: number }[]>;
  banUntilMs: number;
  lastUsedMs: number | undefined;
}

/** Expired subjects examined (at the LRU end) per request; keeps eviction amortised O(1). */
const SWEEP_PER_HIT = 2;

export function createMemoryStore(opts: MemoryStoreOptions): MemoryStore {
  const { ban, clock } = opts;
  validateBanPolicy(ban);
  const maxSubjects = opts.maxSubjects ?? DEFAULT_MAX_SUBJECTS;
  // Map iteration order is insertion order: re-inserting on every hit makes it an LRU list.
  const subjects = new Map<string, SubjectState>();
  const revoked = new Set<string>();
  let changes = 0;

  const expiresAt = (s: SubjectState, nowMs: number): number =>
    Math.max(
      s.banUntilMs,
      s.strikes?.untilMs ?? 0,
      s.offences?.untilMs ?? 0,
      ...[...s.windows.values()].map((w) => w.expiresAt(nowMs)),
    );

  function sweep(nowMs: number): void {
    let examined = 0;
    for (const [subject, state] of subjects) {
      if (subjects.size > maxSubjects || (examined++ < SWEEP_PER_HIT && expiresAt(state, nowMs) <= nowMs)) {
        subjects.delete(subject);
      } else break;
    }
  }

  function stateOf(subject: string): SubjectState {
    const state = subjects.get(subject) ?? { windows: new Map(), banUntilMs: 0 };
    subjects.delete(subject);
    subjects.set(subject, state);
    return state;
  }

  /** The subject's counter of each window, expired up to now. */
  function countersOf(state: SubjectState, limits: readonly WindowLimit[], nowMs: number): WindowCounter[] {
    return limits.map(({ windowSeconds }) => {
      let counter = state.windows.get(windowSeconds);
      if (!counter) state.windows.set(windowSeconds, (counter = WindowCounter.forWindow(windowSeconds)));
      counter.expire(nowMs);
      return counter;
    });
  }

  function decide(subject: string, limits: readonly WindowLimit[], nowMs: number): Decision {
    const state = stateOf(subject);
    const counters = countersOf(state, limits, nowMs);
    const answer = (outcome: Outcome, banUntilMs = 0, refused: readonly boolean[] = []): Decision =>
      assembleDecision(
        outcome,
        nowMs,
        banUntilMs,
        limits,
        counters.map((c, i) => c.report(limits[i]!.limit, nowMs, refused[i] ?? false)),
      );

    if (revoked.has(subject)) return answer("revoked");
    if (state.banUntilMs > nowMs) return answer("banned", state.banUntilMs);
    const refused = counters.map((c, i) => c.total + 1 > limits[i]!.limit);
    if (!refused.includes(true)) {
      for (const c of counters) c.add(nowMs);
      state.lastUsedMs = nowMs;
      return answer("admitted");
    }
    const retryAtMs = Math.max(
      ...counters.map((c, i) => (refused[i] ? c.whenAtMost(limits[i]!.limit - 1, nowMs) : nowMs)),
    );
    const banUntilMs = recordStrike(state, ban, nowMs, retryAtMs);
    return banUntilMs === undefined ? answer("limited", 0, refused) : answer("banned", banUntilMs, refused);
  }

  return {
    async hit(subject, limits) {
      validateWindows(limits);
      const nowMs = clock();
      changes++;
      const decision = decide(subject, limits, nowMs);
      sweep(nowMs);
      return decision;
    },
    record(subject, limits) {
      const nowMs = clock();
      changes++;
      for (const counter of countersOf(stateOf(subject), limits, nowMs)) counter.add(nowMs);
      sweep(nowMs);
    },
    async close() {
      subjects.clear();
    },
    revoke(subject) {
      revoked.add(subject);
    },
    *subjectsWith(prefix) {
      for (const [subject, s] of subjects) {
        if (!subject.startsWith(prefix)) continue;
        const windows = new Map([...s.windows].map(([seconds, counter]) => [seconds, counter.buckets]));
        yield [subject, { windows, banUntilMs: s.banUntilMs, lastUsedMs: s.lastUsedMs }];
      }
    },
    version: () => changes,
    size() {
      let buckets = 0;
      for (const s of subjects.values()) for (const w of s.windows.values()) buckets += w.buckets.length;
      return { subjects: subjects.size, buckets };
    },
    bucketCount(subject) {
      let buckets = 0;
      for (const w of subjects.get(subject)?.windows.values() ?? []) buckets += w.buckets.length;
      return buckets;
    },
  };
}
