/**
 * `npm run bench:revocation`: how long after the admin API acknowledges a revocation every gateway
 * refuses the key (DESIGN: within 1 s, with or without Redis).
 *
 * For each mode — without Redis (the gateways follow the key service's change feed, memory
 * limiter) and with Redis (the key service also publishes the revocation to the key's Redis
 * record, which the limiter's script reads) — starts a key service, a pet service and two gateways,
 * each its own process on loopback. Then, `--revocations N` times (default 60): creates a key
 * through the admin API, waits until both gateways serve it, revokes it (POST
 * /v1/keys/{id}/revoke) and sends GET /v1/pets?limit=1 with it to both gateways back to back
 * until each answers 401. The delay of one revocation is the time from the revoke's answer to the
 * later of the two gateways' first 401 (the probe loop's resolution: one request, about a
 * millisecond). Prints p50 and max per mode as a markdown table.
 */
import { mkdtempSync, rmSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { startRedis, type PrivateRedis } from "../testkit/redis-server.ts";
import { fmt, median } from "../testkit/stats.ts";
import { createKey, revokeKey, startKeyServiceProc } from "./key-service.ts";
import { log, stopAll } from "./processes.ts";
import { startGateway, startPetService, type Service } from "./stack.ts";

const { values: flags } = parseArgs({ options: { revocations: { type: "string" } } });
const revocations = Number(flags.revocations ?? 60);
if (!Number.isInteger(revocations) || revocations < 1) throw new Error(`--revocations must be a positive integer (got ${flags.revocations})`);

const LOG_LEVEL = "warn";

/**
 * GET /v1/pets?limit=1 with `key` from the client address of `agent`. Each revocation polls from
 * an address of its own (127.0.0.2, .3, …): a refused key is counted against its client address
 * like any request without a valid key, and one address would soon be limited (429) instead of refused.
 */
const statusOf = (gateway: Service, key: string, agent: http.Agent): Promise<number> =>
  new Promise((resolve, reject) => {
    http
      .get(`${gateway.address}/v1/pets?limit=1`, { agent, headers: { authorization: `Bearer ${key}` } }, (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode!));
      })
      .on("error", reject);
  });

/** Milliseconds from the revoke's answer until every gateway refuses the key. */
async function oneRevocation(service: Parameters<typeof createKey>[0], gateways: Service[], n: number): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, localAddress: `127.0.${Math.floor(n / 250)}.${2 + (n % 250)}` });
  try {
    return await revocationDelay(service, gateways, n, agent);
  } finally {
    agent.destroy();
  }
}

async function revocationDelay(service: Parameters<typeof createKey>[0], gateways: Service[], n: number, agent: http.Agent): Promise<number> {
  const { id, key } = await createKey(service, { plan: "enterprise", perMinute: 1e9, perDay: 1e9, name: `revocation ${n}` });
  for (const g of gateways) {
    for (let status = await statusOf(g, key, agent); status !== 200; status = await statusOf(g, key, agent)) {
      if (status !== 503) throw new Error(`${g.proc.name} answered ${status} for a new key`);
    }
  }
  await revokeKey(service, id);
  const start = performance.now();
  const refused = await Promise.all(
    gateways.map(async (g) => {
      for (;;) {
        const status = await statusOf(g, key, agent);
        if (status === 401) return performance.now() - start;
        if (status !== 200) throw new Error(`${g.proc.name} answered ${status} while the revocation travelled`);
        if (performance.now() - start > 10_000) throw new Error(`${g.proc.name} still serves a key revoked 10 s ago`);
      }
    }),
  );
  return Math.max(...refused);
}

async function measure(dir: string, mode: "memory" | "redis", redis: PrivateRedis | undefined): Promise<number[]> {
  const redisUrl = redis?.url;
  const service = await startKeyServiceProc({ dir, name: `key-service-${mode}`, logLevel: LOG_LEVEL, ...(redisUrl && { redisUrl }) });
  const pet = await startPetService({ dir, name: `pet-service-${mode}`, db: path.join(dir, `pets-${mode}.sqlite`), logLevel: LOG_LEVEL });
  const gateways = await Promise.all(
    [1, 2].map((i) =>
      startGateway({ dir, name: `gateway-${mode}-${i}`, petAddress: pet.address, logLevel: LOG_LEVEL, keys: service.gatewayEnv, ...(redisUrl && { redisUrl }) }),
    ),
  );
  const delays: number[] = [];
  for (let n = 1; n <= revocations; n++) delays.push(await oneRevocation(service, gateways, n));
  log(`${mode}: ${revocations} revocations, p50 ${fmt(median(delays))} ms, max ${fmt(Math.max(...delays))} ms`);
  await stopAll();
  return delays;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "petstore-revocation-"));
  let redis: PrivateRedis | undefined;
  try {
    const withoutRedis = await measure(dir, "memory", undefined);
    redis = await startRedis();
    const withRedis = await measure(dir, "redis", redis);
    const row = (label: string, d: number[]) => `| ${label} | ${d.length} | ${median(d).toFixed(1)} | ${Math.max(...d).toFixed(1)} |`;
    process.stdout.write(
      [
        "| Two gateways | Revocations | p50 (ms) until both refuse | max (ms) |",
        "|---|---|---|---|",
        row("without Redis (change feed, long poll)", withoutRedis),
        row("with Redis (Redis record + change feed)", withRedis),
        "",
      ].join("\n"),
    );
  } finally {
    await stopAll();
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  },
);
