/**
 * `npm run bench:key-record`: what a key's record in Redis (plan in force, rolls, last use; read
 * and written by the limiter's one script) costs per request. One private redis-server, one Redis
 * store, 32 decisions in flight over 1,000 keys; alternating rounds of:
 *   address  a subject without a record (the script reads and writes no record)
 *   key      an API key without an override (reads the record, writes its last use)
 *   override an API key whose record changes its plan (set-plan)
 * Reports, per decision, the median over rounds of CPU-µs in this process (ioredis and the
 * store) and in redis-server (/proc), and decisions per second.
 */
import { Redis } from "ioredis";
import { createRedisStore } from "../gateway/limiter/redis-store.ts";
import { windowsForLimits } from "../gateway/quota/plans.ts";
import { redisKey, subjectForKey } from "../lib/redis-keys.ts";
import { cpuMeter } from "../testkit/cpu.ts";
import { startRedis } from "../testkit/redis-server.ts";
import { cpuSince, fmt, median } from "../testkit/stats.ts";

const ROUNDS = Number(process.env.ROUNDS ?? 5);
const DECISIONS = Number(process.env.DECISIONS ?? 20_000);
const IN_FLIGHT = 32;
const KEYS = 1_000;

type Variant = "address" | "key" | "override";
const VARIANTS: readonly Variant[] = ["address", "key", "override"];

const server = await startRedis();
const redis = new Redis(server.port, "127.0.0.1");
const store = createRedisStore({ redis, ban: { after: 0, seconds: 900 } });
const windows = windowsForLimits({ perMinute: 1_000_000_000, perDay: 1_000_000_000 });
for (let i = 0; i < KEYS; i++) {
  await redis.hset(redisKey(subjectForKey(`over${i}`), "rec"), { p: "enterprise", m: "1000000000", d: "1000000000" });
}

async function round(variant: Variant): Promise<{ clientUs: number; redisUs: number; perSecond: number }> {
  const subject = (i: number) =>
    variant === "address" ? `ip:10.0.${i >> 8}.${i & 255}` : subjectForKey(`${variant === "key" ? "plain" : "over"}${i}`);
  let next = 0;
  const meter = cpuMeter({ redis: server.process.pid! });
  const cpu = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < DECISIONS) {
        const i = next++ % KEYS;
        await store.hit(subject(i), windows, variant === "address" ? undefined : { generation: 0 });
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return { clientUs: cpuSince(cpu) / DECISIONS, redisUs: meter.stop().redis! / DECISIONS, perSecond: DECISIONS / seconds };
}

const results = new Map<Variant, { clientUs: number[]; redisUs: number[]; perSecond: number[] }>(
  VARIANTS.map((v) => [v, { clientUs: [], redisUs: [], perSecond: [] }]),
);
await round("key"); // warm-up: scripts loaded, records created
for (let r = 0; r < ROUNDS; r++) {
  for (const variant of r % 2 ? [...VARIANTS].reverse() : VARIANTS) {
    const result = await round(variant);
    const into = results.get(variant)!;
    into.clientUs.push(result.clientUs);
    into.redisUs.push(result.redisUs);
    into.perSecond.push(result.perSecond);
  }
}

console.log(`\nLimiter decisions with and without a key's record (${ROUNDS} alternating rounds of ${fmt(DECISIONS)}, ${IN_FLIGHT} in flight, medians)\n`);
console.log("| subject | decisions/s | client CPU-µs/decision | redis-server CPU-µs/decision |");
console.log("|---|---:|---:|---:|");
for (const [variant, r] of results) {
  console.log(`| ${variant} | ${fmt(median(r.perSecond))} | ${fmt(median(r.clientUs), 1)} | ${fmt(median(r.redisUs), 1)} |`);
}
redis.disconnect();
await server.stop();
