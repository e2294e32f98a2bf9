/**
 * The limiter in Redis, shared by every gateway replica: exactly one command per request, an
 * EVALSHA of sliding-window.lua (ioredis `defineCommand`: EVAL the first time on a connection,
 * EVALSHA afterwards, and EVAL again after a NOSCRIPT reply, e.g. after SCRIPT FLUSH or a
 * failover). The script reads Redis TIME, so replicas with skewed clocks agree. A decision that
 * failed after its command was written rejects with AmbiguousDecisionError: it may have counted.
 */
import { readFileSync } from "node:fs";
import { ReplyError, type Cluster, type Redis } from "ioredis";
import { bucketMsFor } from "../../lib/window-buckets.ts";
import { KEY_RECORD_TTL_SECONDS, redisKey, type SubjectPart } from "../../lib/redis-keys.ts";
import { PLAN_NAMES, type PlanName } from "../../lib/api-key-format.ts";
import type { BanPolicy, Decision, LimiterStore, WindowLimit } from "./limiter.ts";
import {
  assembleDecision,
  MAX_BAN_SECONDS,
  OFFENCE_MEMORY_MS,
  OUTCOME_CODES,
  validateBanPolicy,
  validateWindows,
  type WindowReport,
} from "./sliding-window.ts";
import type { Clock } from "../../lib/clock.ts";

export const LIMITER_LUA = readFileSync(new URL("./sliding-window.lua", import.meta.url), "utf8");
/** The read-only script behind `peek` (GET /v1/me): one EVALSHA that writes nothing. */
export const PEEK_LUA = readFileSync(new URL("./peek.lua", import.meta.url), "utf8");
const COMMAND = "petStoreRateLimit";
const PEEK_COMMAND = "petStoreRateLimitPeek";

export interface RedisStoreOptions {
  redis: Redis | Cluster;
  ban: BanPolicy;
  /** Tests only: decide at this clock's time instead of Redis TIME. */
  clock?: Clock;
}

type LimiterCommand = Record<typeof COMMAND | typeof PEEK_COMMAND, (...args: (string | number)[]) => Promise<unknown>>;

/** The Redis key holding one window's buckets: `m` for the minute, `d` for the day, else `w<seconds>`. */
export function windowPart(windowSeconds: number): SubjectPart {
  if (windowSeconds === 60) return "m";
  if (windowSeconds === 86_400) return "d";
  return `w${windowSeconds}`;
}

/** Every key the script may touch for `subject` with these windows, in KEYS order. */
export function limiterKeys(subject: string, windows: readonly WindowLimit[]): string[] {
  const parts: SubjectPart[] = ["revoked", "ban", "strikes", "offences", "rec", ...windows.map((w) => windowPart(w.windowSeconds))];
  return parts.map((part) => redisKey(subject, part));
}

export interface RedisStore extends LimiterStore {
  /**
   * Counts `admitted` requests of `subject` in every window without deciding (into the current
   * bucket): what this replica admitted from memory while Redis was unavailable. Rejects with
   * FoldNotRunError when Redis certainly did not count them; any other failure (a timeout, the
   * connection lost while waiting for the reply) may have counted them.
   */
  fold(subject: string, windows: readonly WindowLimit[], admitted: number): Promise<void>;
}

/** A fold Redis refused (an error reply) or the client never sent (not connected): nothing was counted. */
export class FoldNotRunError extends Error {
  constructor(cause: Error) {
    super(cause.message, { cause });
    this.name = "FoldNotRunError";
  }
}

/**
 * A decision whose script may have run (and counted the request) though no reply came: it did not
 * come within the command timeout (`late`: Redis slow, or the path to it), or the connection was
 * lost while waiting for it.
 */
export class AmbiguousDecisionError extends Error {
  readonly late: boolean;

  constructor(cause: Error) {
    super(cause.message, { cause });
    this.name = "AmbiguousDecisionError";
    this.late = cause.message === "Command timed out"; // ioredis's commandTimeout
  }
}

/** ioredis's errors for a command it rejects before writing it (no offline queue, not connected). */
const UNSENT = new Set([
  "Stream isn't writeable and enableOfflineQueue options is false",
  "Cluster isn't ready and enableOfflineQueue options is false",
]);
const notRun = (err: unknown): err is Error => err instanceof ReplyError || (err instanceof Error && UNSENT.has(err.message));

export function createRedisStore(opts: RedisStoreOptions): RedisStore {
  const { redis, ban, clock } = opts;
  validateBanPolicy(ban);
  redis.defineCommand(COMMAND, { lua: LIMITER_LUA });
  redis.defineCommand(PEEK_COMMAND, { lua: PEEK_LUA });
  const client = redis as unknown as LimiterCommand;

  // The script's policy argument per windows array (callers reuse theirs: a plan's, the anonymous
  // one), validated and formatted once rather than on every request.
  const policies = new WeakMap<readonly WindowLimit[], string>();
  const policyFor = (windows: readonly WindowLimit[]): string => {
    let policy = policies.get(windows);
    if (policy === undefined) {
      validateWindows(windows);
      policy = [
        ban.after,
        ban.seconds * 1000,
        MAX_BAN_SECONDS * 1000,
        OFFENCE_MEMORY_MS,
        windows.length,
        ...windows.flatMap((w) => [w.windowSeconds * 1000, w.limit, bucketMsFor(w.windowSeconds)]),
        KEY_RECORD_TTL_SECONDS * 1000,
      ].join(" ");
      policies.set(windows, policy);
    }
    return policy;
  };

  const now = () => (clock ? String(Math.floor(clock())) : "");
  return {
    async hit(subject, windows, key) {
      const policy = policyFor(windows);
      const keys = limiterKeys(subject, windows);
      let reply: unknown;
      try {
        reply = await client[COMMAND](keys.length, ...keys, now(), policy, key ? String(key.generation) : "", "");
      } catch (err) {
        throw notRun(err) ? err : new AmbiguousDecisionError(err as Error);
      }
      return decisionFromReply(reply, windows);
    },
    async peek(subject, windows, key) {
      const keys = limiterKeys(subject, windows);
      const reply = await client[PEEK_COMMAND](keys.length, ...keys, now(), policyFor(windows), key ? String(key.generation) : "");
      return decisionFromReply(reply, windows);
    },
    async fold(subject, windows, admitted) {
      const keys = limiterKeys(subject, windows);
      try {
        await client[COMMAND](keys.length, ...keys, now(), policyFor(windows), "", String(admitted));
      } catch (err) {
        throw notRun(err) ? new FoldNotRunError(err) : err;
      }
    },
    async close() {
      // The client is the caller's (create-limiter.ts quits it after the heartbeat's last word).
    },
  };
}

/** Turns the script's reply (space-separated tokens: integers and the record's plan) into a Decision. */
export function decisionFromReply(reply: unknown, windows: readonly WindowLimit[]): Decision {
  const tokens = typeof reply === "string" ? reply.split(" ") : [];
  const plan = tokens.splice(3, 1)[0];
  const values = tokens.map(Number);
  const outcome = OUTCOME_CODES[values[0] ?? -1];
  const known = plan === "-" || (PLAN_NAMES as readonly (string | undefined)[]).includes(plan);
  if (!outcome || !known || values.length !== 3 + 5 * windows.length || values.some((v) => !Number.isFinite(v))) {
    throw new Error(`rate limiter: unexpected script reply ${JSON.stringify(reply)}`);
  }
  const reports: WindowReport[] = windows.map((_, i) => {
    const [limit, remaining, resetAtMs, releaseAtMs, refused] = values.slice(3 + 5 * i, 8 + 5 * i) as [number, number, number, number, number];
    return { limit, remaining, resetAtMs, releaseAtMs, refused: refused === 1 };
  });
  return assembleDecision(outcome, values[1]!, values[2]!, windows, reports, plan === "-" ? undefined : (plan as PlanName));
}
