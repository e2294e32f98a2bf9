/**
 * A fault of one Redis Cluster node is the fault of that node: two gateways on a private cluster
 * (3 masters + 3 replicas); one master is killed with SIGKILL while keys on every master are
 * probed. Keys on the healthy masters stay limited exactly, in Redis, through the failover; only
 * the failed master's keys are decided from memory (each gateway with its share), and they are
 * back in Redis once its replica has taken over, the replaced master's outage over.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { subjectForKey, subjectSlot } from "../../../lib/redis-keys.ts";
import type { Limiter } from "../../../gateway/limiter/create-limiter.ts";
import { tokenPayload } from "../../../testkit/keys.ts";
import { startPetService, type RunningPetService } from "../../../testkit/pet-service.ts";
import { startRedisCluster, type PrivateCluster } from "../../../testkit/redis-cluster.ts";
import type { PrivateRedis } from "../../../testkit/redis-server.ts";
import { createTestKeys, startRedisGateway, type RunningGateway, type TestKeys } from "../../../testkit/gateway.ts";
import { until } from "../../../testkit/until.ts";

const LIMIT = 10;
let pets: RunningPetService;
let keys: TestKeys;
let cluster: PrivateCluster;
const gateways: { g: RunningGateway; limiter: Limiter }[] = [];

beforeAll(async () => {
  [pets, keys, cluster] = await Promise.all([startPetService(), createTestKeys(), startRedisCluster()]);
  for (let i = 0; i < 2; i++) {
    const { gateway: g, limiter } = await startRedisGateway({ petServiceAddr: pets.address, keysDir: keys.dir, redisUrl: cluster.url });
    gateways.push({ g, limiter });
  }
});

afterAll(async () => {
  await Promise.all(gateways.map(({ g }) => g.close()));
  await pets?.stop();
  await keys?.remove();
  await cluster?.stop();
});

interface Probe {
  atMs: number;
  status: number;
  /** X-RateLimit-Limit: the full limit when Redis decided, a share when memory did. */
  limit: string | null;
}

it("keeps the healthy masters' keys limited exactly in Redis while one master fails over", async () => {
  await until("both heartbeats count two replicas", () => gateways.every(({ limiter }) => limiter.liveReplicas() === 2));

  // One key on each master; the first master's will lose it.
  const byMaster = new Map<PrivateRedis, string>();
  while (byMaster.size < 3) {
    const key = keys.issue({ plan: "enterprise", perMinute: LIMIT, perDay: 1000 });
    const master = await cluster.masterOf(subjectSlot(subjectForKey(tokenPayload(key).sub as string)));
    if (!byMaster.has(master)) byMaster.set(master, key);
  }
  const [victim, ...others] = [...byMaster.keys()];
  const victimKey = byMaster.get(victim!)!;
  const healthyKeys = others.map((master) => byMaster.get(master)!);

  let turn = 0;
  const send = async (key: string, t0: number): Promise<Probe> => {
    const { g } = gateways[turn++ % 2]!;
    const res = await fetch(`${g.url}/v1/pets?limit=1`, { headers: { Authorization: `Bearer ${key}` } });
    await res.arrayBuffer();
    return { atMs: Date.now() - t0, status: res.status, limit: res.headers.get("x-ratelimit-limit") };
  };
  for (const key of [victimKey, ...healthyKeys]) expect((await send(key, 0)).limit).toBe(String(LIMIT));

  const t0 = Date.now();
  await victim!.kill();
  const probes = new Map<string, Probe[]>([victimKey, ...healthyKeys].map((k) => [k, []]));
  const readiness: number[] = [];
  const outages = new Set<string>();
  let healedAtMs: number | undefined;
  let backInRedisAtMs: number | undefined;
  const healed = cluster.waitHealthy({ timeoutMs: 60_000 }).then(() => (healedAtMs = Date.now() - t0));
  // Probe every master's key (each in its own loop, through alternating gateways) until the failed
  // master's key is back in Redis (the full limit in its header) and the cluster is whole again.
  const done = () => backInRedisAtMs !== undefined && healedAtMs !== undefined;
  const probing = [...probes].map(async ([key, list]) => {
    while (!done()) {
      if (Date.now() - t0 > 60_000) throw new Error("the failed master's keys did not come back to Redis within 60 s");
      const probe = await send(key, t0);
      list.push(probe);
      if (key === victimKey && probe.limit === String(LIMIT) && list.some((p) => p.limit !== String(LIMIT))) {
        backInRedisAtMs ??= probe.atMs;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  });
  const watching = (async () => {
    while (!done()) {
      for (const { limiter } of gateways) outages.add(limiter.outage());
      readiness.push((await fetch(`${gateways[0]!.g.url}/readyz`)).status);
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  await Promise.all([...probing, watching]);
  await healed;
  // The failed master was replaced rather than healed, and still its outage ends: no gateway is
  // left in a "partial" outage naming a node that no longer exists.
  await until("both gateways are out of the outage", () => gateways.every(({ limiter }) => limiter.outage() === "none"));
  expect(gateways.map(({ limiter }) => limiter.nodesInFallback())).toEqual([[], []]);

  const victimProbes = probes.get(victimKey)!;
  const summary = {
    failoverMs: healedAtMs,
    exactAgainAfterMs: backInRedisAtMs,
    probesPerKey: victimProbes.length,
    healthyProbesInRedis: healthyKeys.map((k) => probes.get(k)!.filter((p) => p.limit === String(LIMIT)).length),
    victimProbesFromMemory: victimProbes.filter((p) => p.limit !== String(LIMIT)).length,
    statuses: [...new Set([...probes.values()].flat().map((p) => p.status))],
  };
  console.log("cluster failover:", JSON.stringify(summary));
  if (process.env.FAULT_LOG) console.log(JSON.stringify(healthyKeys.map((k) => probes.get(k)!.filter((p) => p.limit !== String(LIMIT)))), victim!.port);

  for (const key of healthyKeys) {
    const list = probes.get(key)!;
    // Every decision of a healthy master's key came from Redis (full limit), none failed…
    expect(list.filter((p) => p.limit !== String(LIMIT))).toEqual([]);
    expect(list.filter((p) => p.status !== 200 && p.status !== 429)).toEqual([]);
    // …and the shared counter admitted exactly the limit across both gateways (1 before the kill).
    expect(list.filter((p) => p.status === 200)).toHaveLength(Math.min(list.length, LIMIT - 1));
  }
  // The failed master's key was decided from memory meanwhile (a share of 5 per gateway), never failed.
  const fromMemory = victimProbes.filter((p) => p.limit !== String(LIMIT));
  expect(new Set(fromMemory.map((p) => p.limit))).toEqual(new Set([String(LIMIT / 2)]));
  expect(victimProbes.filter((p) => p.status >= 500)).toEqual([]);
  // Together the two gateways admitted no more than the limit meanwhile (1 was admitted before).
  expect(fromMemory.filter((p) => p.status === 200).length).toBeLessThanOrEqual(LIMIT - 1);
  // A partial outage: the gateways stayed ready.
  expect(outages.has("partial")).toBe(true);
  expect(outages.has("full")).toBe(false);
  expect(new Set(readiness)).toEqual(new Set([200]));
});
