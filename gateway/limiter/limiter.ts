/**
 * The rate limiter's contract. A store decides, atomically, for one subject (an API key or a
 * client address): ban and revocation first, then every window; it counts the request only
 * when it is admitted. Memory and Redis stores implement it and pass one conformance suite.
 */
import type { PlanName } from "../../lib/api-key-format.ts";

/** One sliding window: at most `limit` requests in any rolling `windowSeconds`. */
export interface WindowLimit {
  windowSeconds: number;
  limit: number;
}

export interface WindowResult extends WindowLimit {
  /** Requests still admitted now in this window (after counting this one, if admitted). */
  remaining: number;
  /** Unix seconds at which this window has its full quota back (when no further requests arrive). */
  resetAt: number;
  /**
   * Unix milliseconds at which `remaining` next grows (the oldest counted bucket leaves the window;
   * for an exhausted window: the first moment it admits again). For an empty window: now + window.
   * The IETF `RateLimit` field's `t` is derived from it.
   */
  releaseAtMs: number;
  /** True when this window refused the request (outcome "limited"). */
  refused: boolean;
}

/**
 * "rolled": the request's key is an older generation whose grace period after `keys roll` is over.
 * "unavailable": the store cannot decide without risking admitting more than the limit (Redis
 * unreachable and this replica's share of the limit is 0, or the number of live replicas is
 * unknown); the gateway answers 503 with Retry-After and counts nothing.
 */
export type Outcome = "admitted" | "limited" | "banned" | "revoked" | "rolled" | "unavailable";

export interface Decision {
  outcome: Outcome;
  /** One per requested window, in the order requested. */
  windows: WindowResult[];
  /** Index into `windows` of the window that binds first (the one with the least remaining). */
  binding: number;
  /** Whole seconds until the first moment a retry is admitted (limited/banned) or worth trying (unavailable); 0 otherwise. */
  retryAfterSeconds: number;
  /** The store's clock when it decided, in milliseconds (Redis TIME for the Redis store). */
  nowMs: number;
  /**
   * The plan of the key's record in the store (Redis: what `keys set-plan` published), whose limits
   * the windows then carry instead of the ones asked for; undefined when the store holds none.
   */
  plan?: PlanName | undefined;
}

/** What the store needs to know of the API key a subject stands for. */
export interface KeySubject {
  /** The request's key generation (ApiKey.generation): older ones stop after their grace period. */
  generation: number;
}

export interface BanPolicy {
  /** Refused requests within the retry period that trigger a ban (BAN_AFTER). */
  after: number;
  /** Ban length in seconds (BAN_SECONDS); repeat offences may escalate. */
  seconds: number;
}

export interface LimiterStore {
  /**
   * Decides one request of `subject` against all `windows` at once. `key` is given for API-key
   * subjects: a store that holds key records (Redis) applies the record's plan and rolls.
   */
  hit(subject: string, windows: readonly WindowLimit[], key?: KeySubject): Promise<Decision>;
  /**
   * The subject's standing now, read without deciding or counting anything (no request counted, no
   * strike, no last use): "revoked", "rolled", "banned" (Retry-After until the ban ends) or
   * "admitted", each window with what it has left. GET /v1/me shows its key's so.
   */
  peek(subject: string, windows: readonly WindowLimit[], key?: KeySubject): Promise<Decision>;
  close(): Promise<void>;
}
