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
  /**
   * Notes what Redis decided for `subject` (the fallback store, on every reply): counts the request
   * here when `counted` (as `record`), and keeps per window how many of the requests Redis counts
   * this replica did not admit itself (other replicas admitted them), until that window's newest
   * request stops counting (erring long: Redis's older buckets leave sooner). During an outage
   * they count against what this replica may admit (`elsewhere`).
   */
  learn(subject: string, windows: readonly WindowLimit[], reply: Decision, counted: boolean): void;
  /** Per window, what Redis last said others admitted that still counts now; undefined when nothing does. */
  elsewhere(subject: string, windows: readonly WindowLimit[]): Elsewhere[] | undefined;
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

/** Requests of one window that Redis counts and other replicas admitted, as last learned; they count until `untilMs`. */
export interface Elsewhere {
  n: number;
  untilMs: number;
}

interface SubjectState extends BanState {
  windows: Map<number, WindowCounter>;
  /** Window length in seconds → what Redis last said other replicas admitted in it. */
  elsewhere?: Map<number, Elsewhere>;
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

  // Loops, not spread arrays: it runs for two subjects on every request (sweep).
  function expiresAt(s: SubjectState, nowMs: number): number {
    let at = Math.max(s.banUntilMs, s.strikes?.untilMs ?? 0, s.offences?.untilMs ?? 0);
    for (const w of s.windows.values()) at = Math.max(at, w.expiresAt(nowMs));
    if (s.elsewhere) for (const e of s.elsewhere.values()) at = Math.max(at, e.untilMs);
    return at;
  }

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
    async peek(subject, limits) {
      validateWindows(limits);
      const nowMs = clock();
      const state = subjects.get(subject);
      // Expiring a tracked window's old buckets changes nothing it counts; an untracked one stays so.
      const reports = limits.map(({ windowSeconds, limit }) => {
        const counter = state?.windows.get(windowSeconds) ?? WindowCounter.forWindow(windowSeconds);
        counter.expire(nowMs);
        return counter.report(limit, nowMs, false);
      });
      if (revoked.has(subject)) return assembleDecision("revoked", nowMs, 0, limits, reports);
      const banUntilMs = state && state.banUntilMs > nowMs ? state.banUntilMs : 0;
      return assembleDecision(banUntilMs ? "banned" : "admitted", nowMs, banUntilMs, limits, reports);
    },
    record(subject, limits) {
      const nowMs = clock();
      changes++;
      for (const counter of countersOf(stateOf(subject), limits, nowMs)) counter.add(nowMs);
      sweep(nowMs);
    },
    learn(subject, limits, reply, counted) {
      const nowMs = clock();
      changes++;
      const state = stateOf(subject);
      const counters = countersOf(state, limits, nowMs);
      for (let i = 0; i < counters.length; i++) {
        const own = counters[i]!;
        const w = reply.windows[i]!;
        if (counted) own.add(nowMs);
        // Redis reports what is left, never more than the limit: a full window counts as the limit.
        const n = w.limit - w.remaining - own.total;
        const known = state.elsewhere?.get(w.windowSeconds);
        if (n <= 0) {
          if (known) state.elsewhere!.delete(w.windowSeconds);
        } else if (known) {
          known.n = n;
          known.untilMs = w.resetAt * 1000;
        } else (state.elsewhere ??= new Map()).set(w.windowSeconds, { n, untilMs: w.resetAt * 1000 });
      }
      sweep(nowMs);
    },
    elsewhere(subject, limits) {
      const known = subjects.get(subject)?.elsewhere;
      if (!known || known.size === 0) return undefined;
      const nowMs = clock();
      const standing = limits.map(({ windowSeconds }) => {
        const e = known.get(windowSeconds);
        return e && e.untilMs > nowMs ? e : { n: 0, untilMs: nowMs };
      });
      return standing.some((e) => e.n > 0) ? standing : undefined;
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
