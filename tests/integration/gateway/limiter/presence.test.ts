/**
 * The presence heartbeat on a private redis-server: replicas count each other, a replica that
 * stops cleanly leaves the count at once, one that dies silently after the TTL, and the last count
 * stands while Redis is unreachable.
 */
import pino from "pino";
import { afterAll, beforeAll, expect, it } from "vitest";
import { startPresence, type Presence } from "../../../../gateway/limiter/presence.ts";
import { createRedisClient, whenReady } from "../../../../lib/redis-client.ts";
import { startRedis, type PrivateRedis } from "../../../../testkit/redis-server.ts";
import { until } from "../../../../testkit/until.ts";

let server: PrivateRedis;
const silent = pino({ level: "silent" });
const started: { presence: Presence; disconnect(): void }[] = [];

beforeAll(async () => {
  server = await startRedis();
});

afterAll(async () => {
  for (const s of started) {
    await s.presence.close();
    s.disconnect();
  }
  await server?.stop();
});

async function replica(id: string): Promise<{ presence: Presence; disconnect(): void }> {
  const redis = createRedisClient(server.url, { commandTimeoutMs: 1000, maxReconnectDelayMs: 100 });
  await whenReady(redis, 5000);
  const presence = startPresence({ redis, logger: silent, id, intervalMs: 100, ttlMs: 500 });
  const handle = { presence, disconnect: () => redis.disconnect() };
  started.push(handle);
  return handle;
}

it("counts live replicas: a clean stop leaves at once, a silent death after the TTL; Redis gone keeps the last count", async () => {
  const [a, b, c] = [await replica("a"), await replica("b"), await replica("c")];
  await until("all three are counted", async () => (await a.presence.beat()) && a.presence.liveReplicas() === 3);

  await c.presence.close(); // clean stop: removes itself
  expect(await a.presence.beat()).toBe(true);
  expect(a.presence.liveReplicas()).toBe(2);

  b.disconnect(); // dies without a word: counted until its last heartbeat is older than the TTL
  await until("b ages out", async () => (await a.presence.beat()) && a.presence.liveReplicas() === 1);

  await server.kill();
  expect(await a.presence.beat()).toBe(false);
  expect(a.presence.liveReplicas()).toBe(1); // the last count stands
  await server.start();
});
