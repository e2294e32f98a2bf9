import type { AddressInfo } from "node:net";
import http, { type Server } from "node:http";
import { createLogger } from "../lib/logger.ts";
import type { PlanName } from "../lib/api-key-format.ts";
import type { KeyRecordJson, Scope } from "../lib/key-record.ts";
import type { AppDeps } from "../gateway/app.ts";
import { loadGatewayConfig } from "../gateway/config.ts";
import { createGateway, createHttpServer } from "../gateway/gateway.ts";
import { createLimiter, type Limiter, type LimiterOptions } from "../gateway/limiter/create-limiter.ts";
import { createGatewayMetrics, limiterMetrics, type GatewayMetrics } from "../gateway/ops/metrics.ts";
import type { Clock } from "../lib/clock.ts";
import { afterAll, beforeAll } from "vitest";
import { adminRequest, startKeyService, type RunningKeyService } from "./key-service.ts";
import { tokenPayload } from "./keys.ts";
import { startPetService, type RunningPetService } from "./pet-service.ts";
import { until } from "./until.ts";

/** What a test asks of a new key (the admin API's POST /v1/keys, with a lifetime instead of a time). */
export interface TestIssueOptions {
  plan?: PlanName;
  perMinute?: number;
  perDay?: number;
  expiresInSeconds?: number;
  name?: string;
  scopes?: Scope[];
  allowedCidrs?: string[];
}

/**
 * A real key service in this process (its own SQLite registry and KEYS_DIR in a temp folder) and
 * its admin API, for tests: gateways follow it (`gatewayEnv`), tests issue, change and revoke keys
 * through it over HTTP as an operator's backend would.
 */
export interface TestKeys {
  /** The key service's KEYS_DIR (its signing pairs). */
  dir: string;
  service: RunningKeyService;
  /** KEYS_URL and KEYS_SERVICE_TOKEN, as a gateway needs them. */
  gatewayEnv: Record<string, string>;
  /** POST /v1/keys (a business key unless told); the token. */
  issue(opts?: TestIssueOptions): Promise<string>;
  /** POST /v1/keys/{id}/revoke, by key or key id. */
  revoke(keyOrId: string): Promise<void>;
  /** PATCH /v1/keys/{id} (JSON Merge Patch). */
  update(keyOrId: string, patch: Record<string, unknown>): Promise<KeyRecordJson>;
  /** POST /v1/keys/{id}/roll; the new token. */
  roll(keyOrId: string, graceSeconds?: number): Promise<string>;
  remove(): Promise<void>;
}

/** A key's id from the key itself or the id. */
export const keyIdOf = (keyOrId: string): string => (keyOrId.includes(".") ? String(tokenPayload(keyOrId).sub) : keyOrId);

export async function createTestKeys(opts: { redisUrl?: string; db?: string } = {}): Promise<TestKeys> {
  const service = await startKeyService({ ...(opts.redisUrl && { redisUrl: opts.redisUrl }), ...(opts.db && { db: opts.db }) });
  const admin = async (method: string, path: string, body?: unknown, contentType = "application/json"): Promise<Record<string, unknown>> => {
    const answer = await adminRequest(service.url, method, path, { token: service.adminToken, body, headers: body === undefined ? {} : { "Content-Type": contentType } });
    if (answer.status >= 300) throw new Error(`${method} ${path} answered ${answer.status}: ${answer.text}`);
    return answer.body as Record<string, unknown>;
  };
  return {
    dir: service.keysDir,
    service,
    gatewayEnv: { KEYS_URL: service.url, KEYS_SERVICE_TOKEN: service.adminToken },
    async issue({ expiresInSeconds, name = "test", plan = "business", ...rest } = {}) {
      const expiresAt = expiresInSeconds === undefined ? undefined : new Date(Date.now() + expiresInSeconds * 1000).toISOString();
      return String((await admin("POST", "/v1/keys", { name, plan, ...rest, ...(expiresAt && { expiresAt }) })).key);
    },
    async revoke(keyOrId) {
      await admin("POST", `/v1/keys/${keyIdOf(keyOrId)}/revoke`);
    },
    update: async (keyOrId, patch) =>
      (await admin("PATCH", `/v1/keys/${keyIdOf(keyOrId)}`, patch, "application/merge-patch+json")) as unknown as KeyRecordJson,
    roll: async (keyOrId, graceSeconds) =>
      String((await admin("POST", `/v1/keys/${keyIdOf(keyOrId)}/roll`, graceSeconds === undefined ? {} : { graceSeconds })).key),
    remove: () => service.stop(),
  };
}

export interface RunningGateway {
  url: string;
  server: Server;
  /** Its Prometheus metrics (the same registry /metrics shows). */
  metrics: GatewayMetrics;
  close(): Promise<void>;
}

export interface GatewayOptions {
  petServiceAddr: string;
  /** The key service it follows (createTestKeys). */
  keys: Pick<TestKeys, "gatewayEnv">;
  clock?: Clock;
  /** A limiter, or a factory given the app's metrics (so Redis faults are counted where /metrics shows them). */
  limiter?: Limiter | ((metrics: GatewayMetrics) => Limiter);
  timeoutMs?: number;
  overrides?: Partial<AppDeps>;
  /** Do not wait for the key service's state (a test of the cold start). */
  cold?: boolean;
  /** Key-hours of usage waiting for the key service at most (gateway/usage/reporter.ts). */
  usageBacklogKeyHours?: number;
  /** More configuration (SIGNUP, TRUST_PROXY…), as the environment would give it. */
  env?: Record<string, string>;
}

/**
 * For one test file or describe block: a pet service, a key service and the real gateway wiring in
 * this process in front of them (its limiter in memory), started before the tests and stopped
 * after them. testkit/gateway-process.ts's useGatewayProcess runs the gateway as its own process.
 */
export function useGateway(): { gateway(): RunningGateway; keys(): TestKeys } {
  let pets: RunningPetService;
  let keys: TestKeys;
  let gateway: RunningGateway;
  beforeAll(async () => {
    [pets, keys] = await Promise.all([startPetService(), createTestKeys()]);
    gateway = await startGateway({ petServiceAddr: pets.address, keys });
  });
  afterAll(async () => {
    await gateway?.close();
    await Promise.all([pets?.stop(), keys?.remove()]);
  });
  return { gateway: () => gateway, keys: () => keys };
}

/**
 * Whether a gateway's /readyz no longer names the key service's state as a reason (it may name
 * others). On a connection of its own, closed after the answer: tests count the gateway's open
 * connections.
 */
export async function keyStateLoaded(url: string): Promise<boolean> {
  const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
    http
      .get(`${url}/readyz`, { agent: false }, (res) => {
        let body = "";
        res.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
        res.on("end", () => resolve({ status: res.statusCode!, body }));
      })
      .on("error", reject);
  });
  if (status === 200) return true;
  const { reasons = [] } = JSON.parse(body) as { reasons?: string[] };
  return !reasons.some((r) => r.startsWith("key state not loaded"));
}

/** The real gateway wiring (createGateway from its configuration), listening on a free loopback port. */
export async function startGateway(opts: GatewayOptions): Promise<RunningGateway> {
  const metrics = createGatewayMetrics();
  const logger = createLogger("gateway-test", process.env.LOG_LEVEL ?? "silent");
  const config = loadGatewayConfig({
    PET_SERVICE_ADDR: opts.petServiceAddr,
    ...opts.keys.gatewayEnv,
    PET_SERVICE_TIMEOUT_MS: String(opts.timeoutMs ?? 2000),
    ...opts.env,
  });
  const gateway = await createGateway(config, {
    clock: opts.clock ?? Date.now,
    logger,
    metrics,
    ...(opts.limiter ? { limiter: typeof opts.limiter === "function" ? opts.limiter(metrics) : opts.limiter } : {}),
    ...(opts.overrides ? { overrides: opts.overrides } : {}),
    ...(opts.usageBacklogKeyHours !== undefined && { usageBacklogKeyHours: opts.usageBacklogKeyHours }),
  });
  const { app } = gateway;
  const server = await new Promise<Server>((resolve) => {
    const s = createHttpServer(app, logger, config).listen(0, "127.0.0.1", () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  if (!opts.cold) await until("the gateway loaded the key service's state", () => keyStateLoaded(url));
  return {
    url,
    server,
    metrics,
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
export async function startRedisGateway(opts: { petServiceAddr: string; keys: Pick<TestKeys, "gatewayEnv">; redisUrl: string }): Promise<{
  gateway: RunningGateway;
  limiter: Limiter;
}> {
  let limiter!: Limiter;
  const gateway = await startGateway({
    petServiceAddr: opts.petServiceAddr,
    keys: opts.keys,
    limiter: (metrics) => (limiter = redisLimiter({ redisUrl: opts.redisUrl, presence: { intervalMs: 100 } })(metrics)),
  });
  return { gateway, limiter };
}

/**
 * Resolves once every gateway admits more of a fresh key than its share of the limit (`share` + 1
 * requests in a row): back on Redis after an outage, and past the while after it in which the
 * share still caps (fallback-store.ts).
 */
export async function untilPastShares(urls: readonly string[], freshKey: () => Promise<string>, share: number): Promise<void> {
  await until("each gateway admits a key beyond its share again", async () => {
    for (const url of urls) {
      const key = await freshKey();
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
