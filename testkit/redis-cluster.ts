import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { startRedis, withRedisClient, type PrivateRedis } from "./redis-server.ts";
import { until } from "./until.ts";

const run = promisify(execFile);

/**
 * A private Redis Cluster: `masters` masters with one replica each, on free loopback ports,
 * nothing persisted (each node's nodes.conf in a temporary directory removed at stop). Node
 * timeout 1 s, so a killed master's replica takes over within a few seconds; full coverage not
 * required, as deploy/README.md tells operators.
 */
export interface PrivateCluster {
  nodes: PrivateRedis[];
  /** `redis+cluster://` with every node as a seed. */
  url: string;
  /** The node currently master of `slot`, asked of a live node. */
  masterOf(slot: number): Promise<PrivateRedis>;
  /**
   * Resolves once every live node reports cluster_state:ok, a live master serves every slot and
   * the nodes agree on which; with `replicas`, also once every master has a replica in sync (so a master can fail over).
   */
  waitHealthy(opts?: { replicas?: boolean; timeoutMs?: number }): Promise<void>;
  stop(): Promise<void>;
}

export async function startRedisCluster(opts: { masters?: number; nodeTimeoutMs?: number } = {}): Promise<PrivateCluster> {
  const masters = opts.masters ?? 3;
  // nodes.conf is fsynced at every configuration change (a failover): on a loaded machine's disk
  // that stalls every node for a while; in memory (/dev/shm) the fsync is free.
  const dir = mkdtempSync(path.join(existsSync("/dev/shm") ? "/dev/shm" : tmpdir(), "petstore-cluster-"));
  const nodes = await Promise.all(
    Array.from({ length: masters * 2 }, (_, i) =>
      startRedis({
        args: [
          "--cluster-enabled", "yes",
          "--cluster-config-file", path.join(dir, `nodes-${i}.conf`),
          "--cluster-node-timeout", String(opts.nodeTimeoutMs ?? 1000),
          "--cluster-announce-ip", "127.0.0.1",
          // Healthy masters keep serving their slots while another fails over (the default, yes,
          // refuses every command cluster-wide with CLUSTERDOWN until the failover ends).
          "--cluster-require-full-coverage", "no",
          "--dir", dir,
        ],
      }),
    ),
  );
  const alive = () => nodes.filter((n) => n.process.exitCode === null && n.process.signalCode === null);
  const cluster: PrivateCluster = {
    nodes,
    url: `redis+cluster://${nodes.map((n) => `127.0.0.1:${n.port}`).join(",")}`,
    async masterOf(slot) {
      const shards = (await withRedisClient(alive()[0]!.port, (c) => c.call("CLUSTER", "SLOTS"))) as [number, number, [string, number]][];
      const shard = shards.find(([from, to]) => slot >= from && slot <= to);
      const port = shard?.[2][1];
      const node = nodes.find((n) => n.port === port);
      if (!node) throw new Error(`no master serves slot ${slot}`);
      return node;
    },
    async waitHealthy({ replicas = false, timeoutMs = 30_000 } = {}) {
      await until("the private Redis Cluster is healthy", async () => {
        const views = await Promise.all(
          alive().map((n) =>
            withRedisClient(n.port, async (c) => {
              const shards = (await c.call("CLUSTER", "SLOTS")) as [number, number, ...[string, number][]][];
              const info = String(await c.call("INFO", "replication"));
              const live = new Set(alive().map((a) => a.port));
              return {
                ok:
                  String(await c.call("CLUSTER", "INFO")).includes("cluster_state:ok") &&
                  shards.every(([, , master]) => live.has(Number(master?.[1]))),
                synced: !info.includes("role:slave") || info.includes("master_link_status:up"),
                replicated: shards.every((shard) => shard.length >= 4),
                slots: JSON.stringify(shards.map(([a, b, m]) => [a, b, m?.[1]]).sort()),
              };
            }).catch(() => ({ ok: false, synced: false, replicated: false, slots: "" })),
          ),
        );
        const agreed = views.every((v) => v.ok && v.slots === views[0]!.slots);
        return agreed && (!replicas || views.every((v) => v.synced && v.replicated));
      }, timeoutMs, 100);
    },
    async stop() {
      await Promise.all(nodes.map((n) => n.stop()));
      rmSync(dir, { recursive: true, force: true });
    },
  };

  try {
    await run("redis-cli", ["--cluster", "create", ...nodes.map((n) => `127.0.0.1:${n.port}`), "--cluster-replicas", "1", "--cluster-yes"]);
    await cluster.waitHealthy({ replicas: true });
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}
