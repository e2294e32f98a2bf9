import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { Redis } from "ioredis";
import { startRedis, withRedisClient, type PrivateRedis } from "./redis-server.ts";
import { until } from "./until.ts";

/**
 * A private Sentinel setup: a primary, one replica and one Sentinel (quorum 1) watching them,
 * on free loopback ports; the primary is declared down after 1 s, so a killed primary's replica
 * is promoted within a few seconds.
 */
export interface PrivateSentinel {
  primary: PrivateRedis;
  replica: PrivateRedis;
  sentinel: PrivateRedis;
  /** `redis+sentinel://…/mymaster`, as the gateway's REDIS_URL. */
  url: string;
  /** The port the Sentinel currently names as the primary's. */
  primaryPort(): Promise<number>;
  /** Resolves once the Sentinel sees the replica in sync with the primary. */
  waitReplicated(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

const SENTINEL_PRIMARY_NAME = "mymaster";

export async function startRedisSentinel(): Promise<PrivateSentinel> {
  const dir = mkdtempSync(path.join(tmpdir(), "petstore-sentinel-"));
  const primary = await startRedis();
  const replica = await startRedis({ args: ["--replicaof", "127.0.0.1", String(primary.port)] });
  const conf = path.join(dir, "sentinel.conf"); // the Sentinel rewrites it: a file of its own
  writeFileSync(
    conf,
    [
      `dir ${dir}`,
      `sentinel monitor ${SENTINEL_PRIMARY_NAME} 127.0.0.1 ${primary.port} 1`,
      `sentinel down-after-milliseconds ${SENTINEL_PRIMARY_NAME} 1000`,
      `sentinel failover-timeout ${SENTINEL_PRIMARY_NAME} 10000`,
      "",
    ].join("\n"),
  );
  const sentinel = await startRedis({ configFile: conf, args: ["--sentinel"] });
  const ask = <T>(fn: (c: Redis) => Promise<T>): Promise<T> => withRedisClient(sentinel.port, fn);
  const setup: PrivateSentinel = {
    primary,
    replica,
    sentinel,
    url: `redis+sentinel://127.0.0.1:${sentinel.port}/${SENTINEL_PRIMARY_NAME}`,
    async primaryPort() {
      const [, port] = (await ask((c) => c.call("SENTINEL", "GET-MASTER-ADDR-BY-NAME", SENTINEL_PRIMARY_NAME))) as [string, string];
      return Number(port);
    },
    async waitReplicated(timeoutMs = 30_000) {
      await until(
        "the Sentinel sees the replica in sync",
        async () => {
          const replicas = (await ask((c) => c.call("SENTINEL", "REPLICAS", SENTINEL_PRIMARY_NAME)).catch(() => [])) as string[][];
          const fields = replicas.map((r) => Object.fromEntries(r.flatMap((v, i) => (i % 2 ? [] : [[v, r[i + 1]]]))));
          return fields.some((f) => f.flags === "slave" && f["master-link-status"] === "ok");
        },
        timeoutMs,
        100,
      );
    },
    async stop() {
      await Promise.all([sentinel.stop(), replica.stop(), primary.stop()]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  try {
    await setup.waitReplicated();
  } catch (err) {
    await setup.stop();
    throw err;
  }
  return setup;
}
