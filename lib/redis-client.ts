/**
 * The one Redis connection factory (the gateway's limiter, `keys revoke`), tuned to fail fast:
 * a request never waits more than the command timeout (the gateway's REDIS_COMMAND_TIMEOUT_MS)
 * for Redis, nothing queues while disconnected, and the client keeps reconnecting in the
 * background (capped backoff) so the gateway returns to Redis by itself.
 *
 * REDIS_URL forms:
 *   redis://[user:pass@]host:6379[/db]          one server (rediss:// for TLS)
 *   redis+cluster://[user:pass@]h1:7000,h2:7001 Redis Cluster, seed nodes (rediss+cluster:// for TLS)
 *   redis+sentinel://[user:pass@]s1:26379,s2:26379/mymaster
 *                                               Sentinel-managed primary named `mymaster`
 *                                               (credentials are the primary's; rediss+sentinel:// for TLS)
 */
import { Cluster, Redis, type RedisOptions } from "ioredis";
import { z } from "zod";

/**
 * ioredis defines `class VerbatimString extends String` (a RESP3 reply type). Deriving from String
 * puts String.prototype into V8's prototype "setup mode" (dictionary properties), and V8 makes a
 * prototype fast again only when a property is loaded through an object that has it in its
 * chain, never through a primitive string. Left so, every `str.charCodeAt`, `str.slice`… in the
 * process takes V8's generic property load; pino's JSON escaping makes one per character of every
 * log line. Loading a String method through a String object, often enough for V8 to give the load
 * its feedback, makes String.prototype fast again (docs/performance.md, Where the time goes).
 */
function restoreFastStringPrototype(): void {
  const wrapper = new String("");
  const load = () => wrapper.charCodeAt;
  for (let i = 0; i < 100; i++) load();
}
restoreFastStringPrototype();

/**
 * The gateway's REDIS_COMMAND_TIMEOUT_MS unless set: twice the largest limiter round trip a
 * gateway saw under load on a busy 2-core machine (bench/limiter-latency.ts; docs/performance.md,
 * "The limiter's Redis round trip under load", gives the figures), so that a burst does not make a
 * healthy Redis look slow.
 */
export const DEFAULT_COMMAND_TIMEOUT_MS = 2000;

export interface RedisClientOptions {
  /** Per-command timeout (default DEFAULT_COMMAND_TIMEOUT_MS). */
  commandTimeoutMs?: number;
  /** TCP connect timeout (default 1000 ms). */
  connectTimeoutMs?: number;
  /**
   * Reconnect backoff cap (default 200 ms, plus up to 50 ms of jitter): the gateway's limiter is
   * back on Redis within about that long of its return. Reconnection never stops.
   */
  maxReconnectDelayMs?: number;
  /** Connection errors are reported here (default: ignored; the fallback store logs outages). */
  onError?: (err: Error) => void;
}

export type RedisTarget =
  | { mode: "single"; url: string }
  | { mode: "cluster" | "sentinel"; tls: boolean; nodes: { host: string; port: number }[]; username?: string; password?: string; name?: string };

const MULTI_HOST = /^(rediss?)\+(cluster|sentinel):\/\/(?:([^@/]*)@)?([^/?#]+)(?:\/([^?#]*))?$/i;

/** Parses a REDIS_URL (see the module comment); throws on a malformed one. */
export function parseRedisUrl(url: string): RedisTarget {
  if (/^rediss?:\/\//i.test(url)) return { mode: "single", url };
  const m = MULTI_HOST.exec(url);
  if (!m) throw new Error("must be redis://, rediss://, redis+cluster:// or redis+sentinel:// URL");
  const [, scheme, kind, auth, hosts, path] = m;
  const mode = kind!.toLowerCase() as "cluster" | "sentinel";
  const nodes = hosts!.split(",").map((node) => {
    const hp = /^(?:\[([^\]]+)\]|([^:]+))(?::(\d+))?$/.exec(node.trim());
    if (!hp) throw new Error(`has a malformed node "${node}"`);
    return { host: hp[1] ?? hp[2]!, port: hp[3] ? Number(hp[3]) : mode === "cluster" ? 6379 : 26379 };
  });
  const target: RedisTarget = { mode, tls: scheme!.toLowerCase() === "rediss", nodes };
  if (auth) {
    const colon = auth.indexOf(":");
    const user = colon < 0 ? "" : decodeURIComponent(auth.slice(0, colon));
    const password = decodeURIComponent(colon < 0 ? auth : auth.slice(colon + 1));
    if (user) target.username = user;
    if (password) target.password = password;
  }
  if (mode === "sentinel") {
    if (!path) throw new Error("needs the primary's name as its path (redis+sentinel://host:26379/mymaster)");
    target.name = decodeURIComponent(path);
  }
  return target;
}

/** REDIS_URL (zod) in every form the client supports; the gateway and the keys CLI both parse it with this. */
export const redisUrl = z.string().superRefine((url, ctx) => {
  try {
    parseRedisUrl(url);
  } catch (err) {
    ctx.addIssue({ code: "custom", message: (err as Error).message });
  }
});

/** Creates the client for REDIS_URL: a Redis (single or Sentinel) or a Cluster. */
export function createRedisClient(url: string, opts: RedisClientOptions = {}): Redis | Cluster {
  const maxDelay = opts.maxReconnectDelayMs ?? 200;
  // Exponential backoff from 50 ms, capped, with jitter; never gives up.
  const retryStrategy = (times: number): number =>
    Math.min(50 * 2 ** Math.min(times - 1, 16), maxDelay) + Math.floor(Math.random() * 50);
  const common: RedisOptions = {
    commandTimeout: opts.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
    connectTimeout: opts.connectTimeoutMs ?? 1000,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy,
  };
  const target = parseRedisUrl(url);
  let client: Redis | Cluster;
  if (target.mode === "single") {
    client = new Redis(url, common);
  } else {
    const credentials = {
      ...(target.username ? { username: target.username } : {}),
      ...(target.password ? { password: target.password } : {}),
      ...(target.tls ? { tls: {} } : {}),
    };
    if (target.mode === "cluster") {
      const { retryStrategy: _perNode, enableOfflineQueue: _queue, ...perNode } = common;
      client = new Cluster(target.nodes, {
        enableOfflineQueue: false,
        clusterRetryStrategy: retryStrategy,
        slotsRefreshTimeout: common.connectTimeout!,
        redisOptions: { ...perNode, ...credentials },
      });
    } else {
      client = new Redis({
        ...common,
        ...credentials,
        sentinels: target.nodes,
        name: target.name!,
        ...(target.tls ? { enableTLSForSentinelMode: true } : {}),
      });
    }
  }
  client.on("error", opts.onError ?? (() => {}));
  return client;
}

/** True while the client can take commands; the gateway's readiness check and the fallback use it. */
export const isRedisReady = (client: Redis | Cluster): boolean => client.status === "ready";

/** Resolves true once the client can take commands, false after `timeoutMs`. */
export function whenReady(client: Redis | Cluster, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    if (isRedisReady(client)) return resolve(true);
    const done = (ok: boolean) => {
      clearTimeout(timer);
      client.off("ready", onReady);
      resolve(ok);
    };
    const onReady = () => done(true);
    const timer = setTimeout(() => done(false), timeoutMs);
    client.on("ready", onReady);
  });
}
