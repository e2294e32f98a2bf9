import { mkdtemp, rm } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import type { Server } from "node:http";
import { createLogger } from "../../lib/logger.js";
import { createApp, type AppDeps } from "../../gateway/app.js";
import { createKeyVerifier } from "../../gateway/auth/jwt-verifier.js";
import { watchRevocations } from "../../gateway/auth/revocation-list.js";
import { createMemoryStore } from "../../gateway/limiter/memory-store.js";
import type { Limiter } from "../../gateway/limiter/create-limiter.js";
import type { Clock, LimiterStore } from "../../gateway/limiter/limiter.js";
import { ANONYMOUS_WINDOWS } from "../../gateway/limiter/plans.js";
import { createGatewayMetrics, type GatewayMetrics } from "../../gateway/metrics.js";
import { createPetClient } from "../../gateway/pet-client.js";
import { notReadyReasons, petServiceHealth } from "../../gateway/readiness.js";
import { ensureKeyPair, issueKey, type IssueOptions } from "../../keys/index.js";

/** A clock tests move by hand; starts at real time so JWT iat/exp stay meaningful. */
export interface FakeClock {
  now: number;
  advance(ms: number): void;
  clock: Clock;
}

export function fakeClock(start = Date.now()): FakeClock {
  const fake: FakeClock = {
    now: start,
    advance(ms) {
      fake.now += ms;
    },
    clock: () => fake.now,
  };
  return fake;
}

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
  /** A store, or a factory given the app's metrics (so Redis faults are counted where /metrics shows them). */
  limiter?: LimiterStore | ((metrics: GatewayMetrics) => LimiterStore);
  timeoutMs?: number;
  overrides?: Partial<AppDeps>;
}

/** The real gateway app with real collaborators, listening on a free loopback port. */
export async function startGateway(opts: GatewayOptions): Promise<RunningGateway> {
  const clock = opts.clock ?? Date.now;
  const logger = createLogger("gateway-test", "silent");
  const revocations = watchRevocations({ keysDir: opts.keysDir, pollMs: 100 });
  const verifier = createKeyVerifier({ keysDir: opts.keysDir, clock, revocations });
  const metrics = createGatewayMetrics();
  const limiter =
    typeof opts.limiter === "function"
      ? opts.limiter(metrics)
      : (opts.limiter ?? createMemoryStore({ ban: { after: 20, seconds: 900 }, clock }));
  const pets = createPetClient({ address: opts.petServiceAddr, timeoutMs: opts.timeoutMs ?? 2000, latency: metrics.grpcDuration });
  const petHealth = petServiceHealth(opts.petServiceAddr);
  if ("ready" in limiter && typeof limiter.ready === "function") await (limiter as Limiter).ready(2000);
  const app = createApp({
    pets,
    verifier,
    limiter,
    clock,
    logger,
    trustProxy: false,
    bodyLimitBytes: 16 * 1024,
    anonymousWindows: ANONYMOUS_WINDOWS,
    metrics,
    readiness: () => notReadyReasons([petHealth]),
    upstreams: [],
    upstreamTimeoutMs: 2000,
    ...opts.overrides,
  });
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, "127.0.0.1", () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    server,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      pets.close();
      petHealth.close();
      verifier.close();
      revocations.close();
      if (typeof opts.limiter !== "object") await limiter.close();
    },
  };
}
