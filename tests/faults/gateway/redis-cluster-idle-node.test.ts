/**
 * A Cluster master that failed one request and then gets none (its keys idle) must not stay "in
 * fallback" for good: the gateway's metric and alert would say Redis is degraded while every node
 * answers. The master is made to time out without failing over: CLIENT PAUSE holds its clients'
 * writes (the limiter's script) past the command timeout while the cluster bus goes on.
 */
import calculateSlot from "cluster-key-slot";
import { afterAll, beforeAll, expect, it } from "vitest";
import { PRESENCE_KEY, subjectForKey, subjectSlot } from "../../../lib/redis-keys.ts";
import type { Limiter } from "../../../gateway/limiter/create-limiter.ts";
import { tokenPayload } from "../../../testkit/keys.ts";
import { startPetService, type RunningPetService } from "../../../testkit/pet-service.ts";
import { startRedisCluster, type PrivateCluster } from "../../../testkit/redis-cluster.ts";
import { withRedisClient } from "../../../testkit/redis-server.ts";
import { createTestKeys, startRedisGateway, type RunningGateway, type TestKeys } from "../../../testkit/gateway.ts";
import { until } from "../../../testkit/until.ts";

let pets: RunningPetService;
let keys: TestKeys;
let cluster: PrivateCluster;
let gateway: { g: RunningGateway; limiter: Limiter };

beforeAll(async () => {
  [pets, keys, cluster] = await Promise.all([startPetService(), createTestKeys(), startRedisCluster()]);
  const { gateway: g, limiter } = await startRedisGateway({ petServiceAddr: pets.address, keys, redisUrl: cluster.url });
  gateway = { g, limiter };
});

afterAll(async () => {
  await gateway?.g.close();
  await pets?.stop();
  await keys?.remove();
  await cluster?.stop();
});

it("ends the outage of a master that failed once, though none of its keys is asked again", async () => {
  await until("the heartbeat counts this replica", () => gateway.limiter.liveReplicas() === 1);
  // A key on a master other than the heartbeat's (the heartbeat must keep answering).
  const heartbeatMaster = await cluster.masterOf(calculateSlot(PRESENCE_KEY));
  let key: string;
  let master;
  do {
    key = await keys.issue();
    master = await cluster.masterOf(subjectSlot(subjectForKey(tokenPayload(key).sub as string)));
  } while (master === heartbeatMaster);
  const call = () => fetch(`${gateway.g.url}/v1/pets?limit=1`, { headers: { Authorization: `Bearer ${key}` } });

  expect((await call()).status).toBe(200);
  await withRedisClient(master.port, (c) => c.call("CLIENT", "PAUSE", "1500", "WRITE"));
  expect((await call()).status).toBe(200); // decided from memory after the command timeout
  expect(gateway.limiter.outage()).toBe("partial");

  // No request for that key again: the outage still ends once the master answers.
  await until("the gateway is out of the outage", () => gateway.limiter.outage() === "none", 10_000);
  expect(gateway.limiter.nodesInFallback()).toEqual([]);
});
