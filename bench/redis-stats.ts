import { Redis } from "ioredis";
import { createRedisStore } from "../gateway/limiter/redis-store.ts";
import { windowsFor } from "../gateway/quota/plans.ts";
import { PRESENCE_KEY, redisKey, subjectForKey } from "../lib/redis-keys.ts";
import type { HttpTarget } from "./load.ts";
import { median } from "../testkit/stats.ts";

/** Redis figures of the benchmark: commands per request (INFO commandstats, MONITOR) and limiter memory per key. */

/** Per-command call counts from INFO commandstats. */
export async function commandStats(redis: Redis): Promise<Map<string, number>> {
  const info = await redis.info("commandstats");
  const stats = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) stats.set(m[1]!, Number(m[2]));
  return stats;
}

/** Commands the limiter's Lua script runs inside Redis (redis.call): not round trips. */
const SCRIPT_INTERNAL = new Set(["time", "hmget", "hget", "hset", "hdel", "del", "exists", "get", "set", "pexpire"]);

export interface CommandCounts {
  /** EVALSHA/EVAL per request: the script runs. */
  scripts: number;
  /** Commands run inside the script per request (commandstats counts them too). */
  internal: number;
  /** Any other command per request (should be 0). */
  other: number;
}

export function commandDelta(before: Map<string, number>, after: Map<string, number>, requests: number): CommandCounts {
  const counts = { scripts: 0, internal: 0, other: 0 };
  for (const [name, calls] of after) {
    const delta = calls - (before.get(name) ?? 0);
    if (delta <= 0 || name === "info") continue; // INFO: our own sampling
    if (name === "evalsha" || name === "eval") counts.scripts += delta;
    else if (SCRIPT_INTERNAL.has(name)) counts.internal += delta;
    else counts.other += delta;
  }
  return { scripts: counts.scripts / requests, internal: counts.internal / requests, other: counts.other / requests };
}

/**
 * Exact round trips per request: MONITOR shows every command a client sends, and the commands
 * a script runs marked as coming from "lua"; those are not round trips. Sequential requests. The
 * gateway's presence heartbeat (one script call a second, whatever the traffic) is not a request's.
 */
export async function commandsPerRequest(redisUrl: string, target: HttpTarget, requests: number): Promise<number> {
  const client = new Redis(redisUrl);
  const monitor = await client.monitor();
  const marker = `bench-marker-${process.pid}-${Date.now()}`;
  let sent = 0;
  let markerSeen: () => void = () => {};
  const seen = new Promise<void>((resolve) => (markerSeen = resolve));
  monitor.on("monitor", (_time: string, args: string[], source: string) => {
    if (args[1] === marker) markerSeen();
    else if (source !== "lua" && !args.includes(PRESENCE_KEY)) sent++;
  });
  await client.ping(marker); // MONITOR is live once it shows this
  await seen;
  const done = new Promise<void>((resolve) => (markerSeen = resolve));
  for (let i = 0; i < requests; i++) {
    const res = await fetch(target.url, {
      method: target.method ?? "GET",
      headers: target.headers ?? {},
      ...(target.body !== undefined && { body: target.body }),
    });
    await res.arrayBuffer();
    if (res.status !== target.status) throw new Error(`${target.url}: expected ${target.status}, got ${res.status}`);
  }
  // MONITOR shows commands in the order Redis ran them: once the marker is back, every command of
  // those requests has been counted.
  await client.ping(marker);
  await done;
  monitor.disconnect();
  client.disconnect();
  return sent / requests;
}

export interface MemoryReport {
  bytes: number;
  minuteBytes: number;
  dayBytes: number;
  minuteFields: number;
  dayFields: number;
  encoding: string;
  admitted: number;
}

/**
 * Limiter memory of one Business key (1,000/minute, 100,000/day) at full use. Redis TIME cannot
 * be moved from outside, so the Redis store runs here with an injected clock (the same script,
 * deciding at the given instant) and takes `hits` requests spread evenly over one simulated day
 * (less than 1 s apart, so the last minute's 1 s buckets are all in use too, as are the 24 min
 * buckets of the day); then MEMORY USAGE of the key's two window hashes.
 */
export async function limiterMemory(redisUrl: string, hits: number): Promise<MemoryReport> {
  const redis = new Redis(redisUrl);
  const DAY_MS = 86_400_000;
  const dayBucketMs = DAY_MS / 60;
  // Start on a day-bucket boundary: then no hit of the day has left the window at the end.
  const start = Math.floor(Date.now() / dayBucketMs) * dayBucketMs - DAY_MS;
  let now = start;
  const store = createRedisStore({ redis, ban: { after: 20, seconds: 900 }, clock: () => now });
  const subject = subjectForKey("bench-memory");
  const windows = windowsFor({ plan: "business" });
  // hits − 60 evenly over the day but its last minute, then one per second in the last minute: the
  // day's quota in use (and not exceeded: nothing refused) with every bucket of both windows filled.
  const spread = hits - 60;
  const times = Array.from({ length: spread }, (_, k) => start + Math.floor((k * (DAY_MS - 60_000)) / spread));
  for (let s = 60; s >= 1; s--) times.push(start + DAY_MS - s * 1000);
  let admitted = 0;
  for (let i = 0; i < times.length; i += 500) {
    const batch = times.slice(i, i + 500).map((at) => {
      now = at;
      return store.hit(subject, windows); // reads the clock synchronously, so each decides at its own `at`
    });
    for (const d of await Promise.all(batch)) if (d.outcome === "admitted") admitted++;
  }
  const m = redisKey(subject, "m");
  const d = redisKey(subject, "d");
  const usage = async (key: string) => Number(await redis.call("MEMORY", "USAGE", key, "SAMPLES", "0"));
  const report: MemoryReport = {
    minuteBytes: await usage(m),
    dayBytes: await usage(d),
    minuteFields: await redis.hlen(m),
    dayFields: await redis.hlen(d),
    encoding: String(await redis.call("OBJECT", "ENCODING", d)),
    admitted,
    bytes: 0,
  };
  report.bytes = report.minuteBytes + report.dayBytes;
  await redis.del(m, d);
  redis.disconnect();
  return report;
}

export function summarizeCounts(counts: CommandCounts[]): CommandCounts {
  return {
    scripts: median(counts.map((c) => c.scripts)),
    internal: median(counts.map((c) => c.internal)),
    other: median(counts.map((c) => c.other)),
  };
}
