import { mkdtemp, rm } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import type { Server } from "node:http";
import { createLogger } from "../lib/logger.ts";
import type { AppDeps } from "../gateway/app.ts";
import { loadGatewayConfig } from "../gateway/config.ts";
import { createGateway, createHttpServer } from "../gateway/gateway.ts";
import { createLimiter, type Limiter, type LimiterOptions } from "../gateway/limiter/create-limiter.ts";
import { createGatewayMetrics, limiterMetrics, type GatewayMetrics } from "../gateway/ops/metrics.ts";
import { ensureKeyPair, issueKey, type IssueOptions } from "../keys/index.ts";
import type { Clock } from "../lib/clock.ts";
import { afterAll, beforeAll } from "vitest";
import { startPetService, type RunningPetService } from "./pet-service.ts";
import { until } from "./until.ts";

/** A temporary KEYS_DIR with a signing pair, and a helper to issue keys into it. */
export interface TestKeys {
  dir: string;
  issue(opts?: Partial<IssueOptions>): string;
  remove(): Promise<void>;
}

export async function createTestKeys(): Promise<TestKeys> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "petstore-keys-"));
  ensureKeyPair(dir);
  return {
    dir,
    issue: (opts = {}) => issueKey(dir, { plan: "business", ...opts }),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

export interface RunningGateway {
  url: string;
  server: Server;
  close(): Promise<void>;
}

export interface GatewayOptions {
  petServiceAddr: string;
  keysDir: string;
  clock?: Clock;
  /** A limiter, or a factory given the app's metrics (so Redis faults are counted where /metrics shows them). */
  limiter?: Limiter | ((metrics: GatewayMetrics) => Limiter);
  timeoutMs?: number;
  overrides?: Partial<AppDeps>;
}

/**
 * For one test file or describe block: a pet service, a KEYS_DIR and the real gateway wiring in
 * this process in front of them (its limiter in memory), started before the tests and stopped
 * after them. testkit/gateway-process.ts's useGatewayProcess runs the gateway as its own process.
 */
export function useGateway(): { gateway(): RunningGateway; keys(): TestKeys } {
  let pets: RunningPetService;
  let keys: TestKeys;
  let gateway: RunningGateway;
  beforeAll(async () => {
    [pets, keys] = await Promise.all([startPetService(), createTestKeys()]);
    gateway = await startGateway({ petServiceAddr: pets.address, keysDir: keys.dir });
  });
  afterAll(async () => {
    await gateway?.close();
    await Promise.all([pets?.stop(), keys?.remove()]);
  });
  return { gateway: () => gateway, keys: () => keys };
}

/** The real gateway wiring (createGateway from its configuration), listening on a free loopback port. */
export async function startGateway(opts: GatewayOptions): Promise<RunningGateway> {
  const metrics = createGatewayMetrics();
  const logger = createLogger("gateway-test", process.env.LOG_LEVEL ?? "silent");
  const config = loadGatewayConfig({
    PET_SERVICE_ADDR: opts.petServiceAddr,
    KEYS_DIR: opts.keysDir,
    PET_SERVICE_TIMEOUT_MS: String(opts.timeoutMs ?? 2000),
  });
  const gateway = await createGateway(config, {
    clock: opts.clock ?? Date.now,
    logger,
    metrics,
    ...(opts.limiter ? { limiter: typeof opts.limiter === "function" ? opts.limiter(metrics) : opts.limiter } : {}),
    ...(opts.overrides ? { overrides: opts.overrides } : {}),
  });
  const { app } = gateway;
  const server = await new Promise<Server>((resolve) => {
    const s = createHttpServer(app, logger, config).listen(0, "127.0.0.1", () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await gateway.close();
    },
  };
}

/** The in-memory limiter (no REDIS_URL) on `clock`, as startGateway's `limiter`. */
export function memoryLimiter(opts: { clock: Clock; ban: LimiterOptions["ban"] }): Limiter {
  return createLimiter({ ...opts, logger: createLogger("gateway-test", "silent") });
}

/**
 * A limiter factory for startGateway's `limiter`: the real limiter wiring on the Redis at `redisUrl`
 * (any REDIS_URL form), counting Redis faults and the fallback in the app's metrics, with a 1 s
 * command timeout (tests stall Redis past it on purpose, e.g. CLIENT PAUSE 1500).
 */
export function redisLimiter(opts: {
  redisUrl: string;
  ban?: LimiterOptions["ban"];
  presence?: LimiterOptions["presence"];
}): (metrics: GatewayMetrics) => Limiter {
  return (metrics) =>
    createLimiter({
      redisUrl: opts.redisUrl,
      ban: opts.ban ?? { after: 1000, seconds: 900 },
      clock: Date.now,
      logger: createLogger("gateway-test", "silent"),
      metrics: limiterMetrics(metrics),
      redis: { commandTimeoutMs: 1000 },
      ...(opts.presence ? { presence: opts.presence } : {}),
    });
}

/**
 * A gateway limiting in the Redis at `redisUrl` through redisLimiter, with a fast heartbeat
 * (100 ms), for tests about faults.
 */
export async function startRedisGateway(opts: { petServiceAddr: string; keysDir: string; redisUrl: string }): Promise<{
  gateway: RunningGateway;
  limiter: Limiter;
}> {
  let limiter!: Limiter;
  const gateway = await startGateway({
    petServiceAddr: opts.petServiceAddr,
    keysDir: opts.keysDir,
    limiter: (metrics) => (limiter = redisLimiter({ redisUrl: opts.redisUrl, presence: { intervalMs: 100 } })(metrics)),
  });
  return { gateway, limiter };
}

/**
 * Resolves once every gateway admits more of a fresh key than its share of the limit (`share` + 1
 * requests in a row): back on Redis after an outage, and past the while after it in which the
 * share still caps (fallback-store.ts).
 */
export async function untilPastShares(urls: readonly string[], freshKey: () => string, share: number): Promise<void> {
  await until("each gateway admits a key beyond its share again", async () => {
    for (const url of urls) {
      const key = freshKey();
      for (let i = 0; i <= share; i++) {
        const res = await fetch(`${url}/v1/pets?limit=1`, { headers: { Authorization: `Bearer ${key}` } });
        await res.arrayBuffer();
        if (res.status !== 200) return false;
      }
    }
    return true;
  });
}

/** What a test looks at in a gateway's answer to GET /v1/pets. */
export interface Reply {
  status: number;
  /** X-RateLimit-Limit: the full limit when Redis decided, a share when memory did. */
  limit: string | null;
  remaining: string | null;
  retryAfter: string | null;
  /** The Error body's code, for an error status. */
  code?: string;
}

/**
 * `n` concurrent GET /v1/pets?limit=1 with `key`, through `urls` in turn (request i to urls[i %
 * length]); `onReply` is told how many replies are back after each.
 */
export function concurrentGets(urls: readonly string[], key: string, n: number, onReply?: (done: number) => void): Promise<Reply[]> {
  let done = 0;
  return Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const res = await fetch(`${urls[i % urls.length]}/v1/pets?limit=1`, { headers: { Authorization: `Bearer ${key}` } });
      const body = await res.text();
      const header = (name: string) => res.headers.get(name);
      const reply: Reply = { status: res.status, limit: header("x-ratelimit-limit"), remaining: header("x-ratelimit-remaining"), retryAfter: header("retry-after") };
      if (res.status >= 400) reply.code = (JSON.parse(body) as { code: string }).code;
      onReply?.(++done);
      return reply;
    }),
  );
}
