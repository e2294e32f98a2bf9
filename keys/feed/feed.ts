import type { Logger } from "../../lib/logger.ts";
import { createRedisClient } from "../../lib/redis-client.ts";
import type { KeyRegistry } from "../registry/store.ts";
import { FOLLOW_INTERVAL_MS, startFeedFollower, type FeedFollower } from "./follower.ts";
import { createRedisPublisher } from "./redis-publisher.ts";

/** The JWKS is compared with what Redis holds this often (a `keys rotate` or `retire` by the CLI), and written again every minute. */
const JWKS_CHECK_MS = 5_000;
const JWKS_REWRITE_MS = 60_000;

export interface Feed {
  follower: FeedFollower;
  /** Whether Redis (when configured) took the last publishing round. */
  redisOk(): boolean;
  close(): Promise<void>;
}

/**
 * The events follower (long polls wait on it) and, with `redisUrl`, the Redis publisher driven by
 * it: the key records of every event after the seq Redis last took (rl:{keys}:seq), so a restart
 * republishes only what is newer, and rows written by anyone (CLI, other replicas) are published.
 */
export async function startFeed(deps: { registry: KeyRegistry; logger: Logger; keysDir: string; redisUrl?: string | undefined }): Promise<Feed> {
  const { registry, logger } = deps;
  if (deps.redisUrl === undefined) {
    const follower = await startFeedFollower({ registry, logger });
    return { follower, redisOk: () => true, close: () => follower.close() };
  }

  const client = createRedisClient(deps.redisUrl, { commandTimeoutMs: 2_000, maxReconnectDelayMs: 1_000 });
  const publisher = createRedisPublisher({ client, registry, keysDir: deps.keysDir, logger });
  let upTo: number | undefined;
  let ok = false;
  let failing = false;
  let jwksCheckedAt = 0;
  let jwksWrittenAt = 0;
  let round: Promise<void> | undefined;
  let closed = false;

  const publishRound = async () => {
    try {
      upTo ??= await publisher.publishedSeq();
      while (upTo < follower.head()) {
        const events = await registry.events(upTo, 500);
        if (events.length === 0) break;
        await publisher.publish(events);
        upTo = events.at(-1)!.seq;
      }
      const now = Date.now();
      if (now - jwksCheckedAt >= JWKS_CHECK_MS) {
        const always = now - jwksWrittenAt >= JWKS_REWRITE_MS;
        await publisher.publishJwks(always);
        jwksCheckedAt = now;
        if (always) jwksWrittenAt = now;
      }
      if (failing) logger.info({ seq: upTo }, "publishing key records to Redis again");
      ok = true;
      failing = false;
    } catch (err) {
      // Once per outage; the message only (a Redis error's fields may carry the URL).
      if (!failing) logger.warn({ err: { message: (err as Error).message } }, "publishing key records to Redis failed; retrying");
      ok = false;
      failing = true;
    }
  };
  const kick = () => {
    if (closed || round) return;
    round = publishRound().finally(() => (round = undefined));
  };
  const follower = await startFeedFollower({ registry, logger, onEvents: async () => kick() });
  const timer = setInterval(kick, FOLLOW_INTERVAL_MS);
  kick();

  return {
    follower,
    redisOk: () => ok,
    async close() {
      closed = true;
      clearInterval(timer);
      await follower.close();
      await round;
      client.disconnect();
    },
  };
}
