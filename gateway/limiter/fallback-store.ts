/**
 * Redis first, process memory when Redis is unavailable: the gateway keeps serving and keeps
 * limiting while Redis (or one node of a Redis Cluster) is down, logs each outage once when it
 * starts and once when it ends, counts the faults, and goes back to Redis as soon as it answers.
 *
 * A fault is the fault of one node. On Redis Cluster `nodeOf` names the master holding a
 * subject's slot: a failure marks that node, and only subjects on a marked node are decided from
 * memory; the others stay in Redis. A failure while the client claims to be ready (the node's
 * connection lost, an error reply; a timeout on a lone replica, below) skips that node for
 * `probeIntervalMs` before its next subject tries it again, so requests do not each pay for it.
 * While the client as a whole is not ready (disconnected, reconnecting) every decision comes
 * from memory at once.
 * A failover replaces a node rather than healing it: once `isNode` says a failed node holds no
 * slots any more, its outage is over (its subjects already go to the new master).
 *
 * Never over-admitting: from memory a replica admits only its share of each limit, the limit
 * divided by the live replicas (presence.ts; rounded down), so the replicas together admit at
 * most the limit in any window that lies within the outage. For a window the outage cuts, each
 * replica also keeps what Redis last told it (memory-store.ts `learn`): every request Redis
 * admitted through this replica counts against its share, and the window's count in each reply,
 * less those, is what the others admitted, which comes off the limit too: own + others ≤ limit.
 * So the replicas stay within the limit unless one admitted through Redis beyond its share after
 * another last heard of the key (the worst case is that excess; docs/reliability.md, "What never
 * over-admitting covers"). A share
 * of 0 (a limit smaller than the number of replicas), or a replica count not yet known, admits
 * nothing: the decision is "unavailable" (503 with Retry-After), not a 429 the client earned.
 *
 * Redis slow is not Redis down. A decision whose reply did not come within the command timeout
 * (REDIS_COMMAND_TIMEOUT_MS) may have been counted, and while the connection stands the other
 * replicas go on deciding in Redis, where what this one admitted from memory is not seen: so it
 * is not decided from memory but refused with 503 and Retry-After ("unavailable"), and the next
 * requests ask Redis again. It is never sent twice (a retry on the same connection waits behind
 * the first; the first's reply, had it come, is the only one that cannot count twice). A refused
 * one counts as admitted here all the same, in case the script ran. A lone replica (the heartbeat
 * counts one) has no one to over-admit with, and a timeout while the connection is down (a
 * Cluster node being re-established) is a lost connection, which every replica loses together
 * when Redis goes down: both decide from memory, as in an outage.
 *
 * Leaving an outage admits no more than the limit either. What this replica admitted from memory
 * is remembered per subject and window (fold-ledger.ts) and folded into Redis once the subject's
 * node is back: before that subject's next decision there, and for every remembered subject as
 * soon as the node is known to answer (the client ready again, the heartbeat, a ping, a slot map
 * without the failed master), so idle subjects too. Replicas do not go back at the same instant
 * (each within about 250 ms of the node serving: the reconnect backoff, the probe interval), and
 * one that is back cannot see what another has not folded yet; so for `settleMs` (1 s) after an
 * outage ends, and on a request that probes a node still marked down, a request is admitted only
 * if this replica's share admits it too, taken with no fewer live replicas than when the outage
 * ended. A request the share refuses does not ask Redis: the client's events, the heartbeat and
 * the pings (create-limiter.ts) notice the return without it.
 *
 * A fold is never counted twice. One that Redis refused or the client never sent
 * (FoldNotRunError) is kept for the next try; one whose reply was lost (a timeout) may have run,
 * so it is dropped with a warning, and Redis may then miss those requests. A request whose
 * decision was lost with the connection and which memory then admitted is folded: had the script
 * run, Redis counts it twice (erring toward refusing). docs/reliability.md ("Redis slow is not
 * Redis down", "What never over-admitting covers") says what all this does and does not cover.
 */
import type { Counter, Gauge, Histogram } from "prom-client";
import type { Logger } from "../../lib/logger.ts";
import type { Decision, LimiterStore, WindowLimit } from "./limiter.ts";
import { DEFAULT_MAX_SUBJECTS, type MemoryStore } from "./memory-store.ts";
import { AmbiguousDecisionError, type RedisStore } from "./redis-store.ts";
import { createFoldLedger } from "./fold-ledger.ts";
import { foldBack } from "./fold-back.ts";
import { lateNodes } from "./late-nodes.ts";
import { refusal, shareDecisions, shareLimit } from "./replica-share.ts";
import { systemClock, type Clock } from "../../lib/clock.ts";

export interface FallbackMetrics {
  /** Incremented on every failed Redis decision or fold (and once when an outage is noticed from the client state). */
  faults: Pick<Counter, "inc">;
  /** 1 while any decision comes from memory, 0 otherwise. */
  fallbackActive: Pick<Gauge, "set">;
  /** Decisions whose script may have run without a reply: why (`timeout`, `connection_lost`) and how they were answered (`unavailable`, `memory`). */
  ambiguous: Pick<Counter<"reason" | "answer">, "inc">;
  /** Seconds from a decision sent to Redis to its reply (those that came). */
  redisDuration: Pick<Histogram, "observe">;
}

export interface FallbackStoreOptions {
  primary: Pick<RedisStore, "hit" | "peek" | "fold" | "close">;
  fallback: Pick<MemoryStore, "hit" | "peek" | "record" | "learn" | "elsewhere" | "close">;
  logger: Logger;
  metrics?: FallbackMetrics;
  /** Whether the primary can take commands now (e.g. `() => isRedisReady(client)`); default always. */
  isPrimaryReady?: () => boolean;
  /** The Redis node holding a subject's keys (Cluster: its slot's master). Default: one node for all. */
  nodeOf?: (subject: string) => string;
  /** Whether a node still holds slots (Cluster: the client's slot map). Default: always. */
  isNode?: (node: string) => boolean;
  /** Whether the connection to a node stands (Cluster: its master's). Default: `isPrimaryReady`. */
  isNodeReady?: (node: string) => boolean;
  /** Live gateway replicas (presence.ts), undefined while unknown. Default 1: a lone gateway. */
  liveReplicas?: () => number | undefined;
  /** After a node fails, how long its subjects are decided from memory before it is tried again (default 250 ms). */
  probeIntervalMs?: number;
  /** After an outage ends, how long this replica's share still caps what Redis admits (default 4 probe intervals). */
  settleMs?: number;
  /** Subjects whose admissions from memory are remembered until folded (default the memory store's bound). */
  maxSubjects?: number;
  /** Time source for the probe interval, the ledger and "unavailable" decisions (default the system clock). */
  clock?: Clock;
}

/** "full": every decision comes from memory; "partial": some Cluster nodes' subjects do. */
export type Outage = "none" | "partial" | "full";

export interface FallbackStore extends LimiterStore {
  outage(): Outage;
  /** The nodes whose subjects are decided from memory now. */
  nodesInFallback(): string[];
  /** How much of Redis has left its last decision unanswered in time ("full": the one node of an unsharded Redis). */
  late(): Outage;
  /** The nodes whose last decision was not answered in time: their requests get 503 until one is. */
  nodesLate(): string[];
  /**
   * Redis answered outside `hit` (the heartbeat, the client ready again, a ping): an outage of the
   * whole client, or of the one node of an unsharded Redis, is over. Without it only a request ended
   * an outage, and a replica that /readyz took out of rotation got none: it stayed unready after
   * Redis returned. Resolves once what memory admitted has been folded where it can be.
   */
  primaryAnswered(): Promise<void>;
  /** The client lost its connection: an outage, noticed before any request asks. */
  primaryLost(): void;
  /** One Cluster node answered outside `hit` (a ping): its outage is over. Resolves as primaryAnswered. */
  nodeAnswered(node: string): Promise<void>;
  /** The Cluster slot map was refreshed: failed nodes it no longer names were replaced. Resolves as primaryAnswered. */
  nodesChanged(): Promise<void>;
}

/** How long a failed node's subjects are decided from memory before it is tried again. */
export const DEFAULT_PROBE_INTERVAL_MS = 250;
const ONE_NODE = "redis";
/** The client as a whole is not ready: every subject is decided from memory. */
const ALL = "all";

export function createFallbackStore(opts: FallbackStoreOptions): FallbackStore {
  const { primary, fallback, logger, metrics } = opts;
  const isPrimaryReady = opts.isPrimaryReady ?? (() => true);
  const sharded = opts.nodeOf !== undefined;
  const nodeOf = opts.nodeOf ?? (() => ONE_NODE);
  const isNode = opts.isNode ?? (() => true);
  const isNodeReady = opts.isNodeReady ?? (() => isPrimaryReady());
  const liveReplicas = opts.liveReplicas ?? (() => 1);
  const probeIntervalMs = opts.probeIntervalMs ?? DEFAULT_PROBE_INTERVAL_MS;
  const settleMs = opts.settleMs ?? 4 * probeIntervalMs;
  const clock = opts.clock ?? systemClock;
  const ledger = createFoldLedger({ clock, maxSubjects: opts.maxSubjects ?? DEFAULT_MAX_SUBJECTS });
  /** Nodes in fallback (ALL: the whole client) → the instant their subjects may try Redis again. */
  const down = new Map<string, number>();
  /** A subject that failed on each node: after a failover it names the node that took over. */
  const witnesses = new Map<string, string>();
  /**
   * Nodes (ALL: every one) whose outage ended → until when their subjects stay capped by the share,
   * and the live replicas then (a Redis that came back empty forgot who is live: until every
   * replica has heartbeated again, the first ones back count fewer, so more each).
   */
  const settling = new Map<string, { until: number; replicas: number | undefined }>();
  /** Nodes whose outage was logged (and whose return will be). */
  const announced = new Set<string>();
  const late = lateNodes({ logger, faults: metrics?.faults });
  const byShare = shareDecisions({ memory: fallback, clock });
  /** Redis answers for this subject now (no outage of its node). */
  const answering = (subject: string) => isPrimaryReady() && !down.has(ALL) && !down.has(nodeOf(subject));
  const { foldOf, foldPending } = foldBack({
    primary,
    ledger,
    logger,
    // Only where Redis is back: a node that fails a fold is marked down (its other subjects wait for its return).
    ready: answering,
    failed: (subject, err) => markDown(nodeOf(subject), clock() + probeIntervalMs, err, subject),
  });

  // A client that is not ready is a full outage even before a request has noticed it (readiness asks).
  const outage = (): Outage => {
    forgetReplaced();
    return !isPrimaryReady() || down.has(ALL) || (!sharded && down.size > 0) ? "full" : down.size > 0 ? "partial" : "none";
  };

  // A failed master that a failover replaced never answers again, so no decision would end its
  // outage: it is dropped once the slot map no longer has it (looked at once per probe interval,
  // or at once when the map was refreshed).
  let nextSweepAt = 0;
  function forgetReplaced(now = false): void {
    if (!sharded || down.size === 0 || (!now && clock() < nextSweepAt)) return;
    nextSweepAt = clock() + probeIntervalMs;
    for (const node of down.keys()) {
      if (node === ALL || isNode(node)) continue;
      const witness = witnesses.get(node);
      recovered(node, "redis node replaced by a failover, limiting from redis", witness === undefined ? node : nodeOf(witness));
    }
  }

  /** A failed decision or fold (counted), or the client found not ready (counted once, unless already in an outage). */
  function markDown(node: string, retryAt: number, err: unknown, subject?: string): void {
    if (subject !== undefined) witnesses.set(node, subject);
    const quiet = node === ALL && down.size > 0; // already limiting from memory, already logged
    if (down.has(node)) {
      if (node !== ALL) metrics?.faults.inc();
      down.set(node, retryAt);
      return;
    }
    down.set(node, retryAt);
    if (quiet) return;
    metrics?.faults.inc();
    metrics?.fallbackActive.set(1);
    announced.add(node);
    logger.error({ err, node }, "redis unavailable, limiting from memory");
  }

  /** `node`'s outage is over: the subjects now on `heir` (itself, or its successor after a failover) settle, memory's admissions are folded. */
  function recovered(node: string, msg = "redis available again, limiting from redis", heir = node): void {
    if (!down.delete(node)) return;
    witnesses.delete(node);
    settling.set(heir, { until: clock() + settleMs, replicas: liveReplicas() });
    if (down.size === 0) metrics?.fallbackActive.set(0);
    if (announced.delete(node)) logger.info({ node }, msg);
    void foldPending();
  }

  /** The client is ready (again): Redis answered it, so an outage of the whole client, or of an unsharded Redis's one node, is over. */
  function clientAnswered(): void {
    recovered(ALL);
    if (!sharded) {
      recovered(ONE_NODE);
      late.answered(ONE_NODE);
    }
  }

  /**
   * While `node`'s subjects leave an outage (the node still marked down, this request probing it,
   * or settling), the live replicas their share is taken with: no fewer than when it ended.
   * Undefined when Redis alone decides.
   */
  function leaving(node: string): { replicas: number | undefined } | undefined {
    if (down.has(node)) return { replicas: liveReplicas() };
    const now = clock();
    for (const [n, { until }] of settling) if (until <= now) settling.delete(n);
    const held = [settling.get(ALL), settling.get(node)].filter((s) => s !== undefined);
    if (held.length === 0) return undefined;
    const live = liveReplicas();
    return { replicas: live === undefined ? undefined : Math.max(live, ...held.map((s) => s.replicas ?? 0)) };
  }


  async function fromMemory(subject: string, windows: readonly WindowLimit[]): Promise<Decision> {
    const replicas = liveReplicas();
    const decision = await byShare(subject, windows, replicas);
    if (!decision) {
      const shown = windows.map((w) => ({ ...w, limit: shareLimit(w.limit, replicas) }));
      return refusal("unavailable", shown, clock(), clock() + probeIntervalMs);
    }
    if (decision.outcome === "admitted") ledger.add(subject, windows);
    return decision;
  }

  /**
   * A decision Redis did not answer in time while other replicas are live (or their number is
   * unknown): refused with 503, since they go on deciding in Redis and would not see what memory
   * admitted. It counts here as admitted all the same, in case the script ran.
   */
  function unanswered(err: AmbiguousDecisionError, node: string, subject: string, windows: readonly WindowLimit[], capped: Decision | undefined): Decision {
    if (!capped) fallback.record(subject, windows);
    late.unanswered(node, err);
    metrics?.ambiguous.inc({ reason: "timeout", answer: "unavailable" });
    return refusal("unavailable", windows, clock(), clock() + probeIntervalMs);
  }


  return {
    async hit(subject, windows, key) {
      if (!isPrimaryReady()) {
        if (!down.has(ALL)) markDown(ALL, 0, new Error("redis client not ready"));
        return fromMemory(subject, windows);
      }
      if (down.has(ALL)) clientAnswered();
      // Only while some node is down, settling or late is a subject's node worth looking up.
      const node = down.size > 0 || settling.size > 0 || late.size() > 0 ? nodeOf(subject) : undefined;
      if (node !== undefined && clock() < (down.get(node) ?? 0)) return fromMemory(subject, windows);
      const probing = node !== undefined && down.has(node);
      let capped: Decision | undefined;
      try {
        // Folded before Redis decides, so that decision sees it. A probe of a node still marked
        // down does not fold (a fold lost to a dead node could not be retried); the share caps it
        // instead, and its success folds.
        const folding = probing ? undefined : foldOf(subject);
        if (folding) await folding;
        // Leaving an outage, other replicas may not have folded yet: this replica's share must
        // admit too. What it admits it counts in memory even if Redis then refuses (an over-count
        // there only makes a later outage's share stricter).
        const cap = node === undefined ? undefined : leaving(node);
        if (cap) {
          capped = await byShare(subject, windows, cap.replicas);
          if (capped && capped.outcome !== "admitted") return capped;
        }
        const sentAt = performance.now();
        const decision = await primary.hit(subject, windows, key);
        metrics?.redisDuration.observe((performance.now() - sentAt) / 1000);
        if (node !== undefined) {
          recovered(node);
          late.answered(node);
          forgetReplaced();
        }
        fallback.learn(subject, windows, decision, decision.outcome === "admitted" && !capped);
        return decision;
      } catch (err) {
        if (err instanceof RangeError) throw err; // invalid windows: a caller bug, not an outage
        const ambiguous = err instanceof AmbiguousDecisionError ? err : undefined;
        const failed = node ?? nodeOf(subject);
        // Late while the connection stands and other replicas are live: Redis slow, not down.
        if (ambiguous?.late && liveReplicas() !== 1 && isNodeReady(failed)) return unanswered(ambiguous, failed, subject, windows, capped);
        // An outage: memory decides, or the share that capped it did.
        markDown(failed, clock() + probeIntervalMs, err, subject);
        if (capped) ledger.add(subject, windows); // the share admitted it: from memory after all
        const decision = capped ?? (await fromMemory(subject, windows));
        const answer = decision.outcome === "unavailable" ? "unavailable" : "memory";
        if (ambiguous) metrics?.ambiguous.inc({ reason: ambiguous.late ? "timeout" : "connection_lost", answer });
        return decision;
      }
    },
    async peek(subject, windows, key) {
      // Redis when it answers for this subject; else memory, which decides for it meanwhile.
      if (!answering(subject)) return fallback.peek(subject, windows, key);
      try {
        return await primary.peek(subject, windows, key);
      } catch (err) {
        if (err instanceof RangeError) throw err;
        return fallback.peek(subject, windows, key);
      }
    },
    outage,
    nodesInFallback: () => {
      forgetReplaced();
      return [...down.keys()];
    },
    late: () => (late.size() === 0 ? "none" : sharded ? "partial" : "full"),
    nodesLate: late.list,
    primaryAnswered() {
      if (isPrimaryReady()) clientAnswered();
      return foldPending();
    },
    primaryLost() {
      if (!down.has(ALL)) markDown(ALL, 0, new Error("redis connection closed"));
    },
    nodeAnswered(node) {
      recovered(node);
      late.answered(node);
      return foldPending();
    },
    nodesChanged() {
      forgetReplaced(true);
      return foldPending();
    },
    async close() {
      await foldPending(); // a replica that stops takes nothing Redis could still be told
      await Promise.allSettled([primary.close(), fallback.close()]);
    },
  };
}
