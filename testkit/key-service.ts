import type { ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import type { Server } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll } from "vitest";
import type { Clock } from "../lib/clock.ts";
import { listen } from "../lib/listen.ts";
import { createLogger, type Logger } from "../lib/logger.ts";
import type { KeyOperations } from "../keys/operations/index.ts";
import { openRegistry } from "../keys/registry/open.ts";
import type { KeyRegistry } from "../keys/registry/store.ts";
import { createKeyService, createKeyServiceServer, type KeyService, type KeyServiceDeps } from "../keys/service.ts";
import { freePort } from "./net.ts";
import { launchNode } from "./process.ts";

export interface StartKeyServiceOptions {
  /** KEYS_DB: a SQLite path or postgres:// URL; default: a SQLite file in a fresh temp folder. */
  db?: string;
  /** KEYS_DIR; default: a fresh temp folder (a signing pair is created in it). */
  keysDir?: string;
  redisUrl?: string;
  clock?: Clock;
  /** KEYS_ADMIN_TOKEN; default: generated and saved in the temp folder. */
  adminToken?: string;
  /** Where the service logs (default: silent). */
  logger?: Logger;
  /** The webhook worker's schedule, timeout, polling, lease (createKeyService's `webhooks`). */
  webhooks?: KeyServiceDeps["webhooks"];
}

/** The real key service (createKeyService) in this process, listening on a free loopback port. */
export interface RunningKeyService {
  url: string;
  /** The bootstrap admin token (scope admin). */
  adminToken: string;
  /** KEYS_DB: another registry handle on it writes as the command line or a replica would. */
  db: string;
  keysDir: string;
  registry: KeyRegistry;
  operations: KeyOperations;
  service: KeyService;
  server: Server;
  /** Closes the listener (cutting open connections), the service and its registry, and removes its temp folder. */
  stop(): Promise<void>;
}

export async function startKeyService(opts: StartKeyServiceOptions = {}): Promise<RunningKeyService> {
  const dir = mkdtempSync(path.join(tmpdir(), "petstore-keys-"));
  const keysDir = opts.keysDir ?? path.join(dir, "keys");
  const db = opts.db ?? path.join(dir, "keys.sqlite");
  const registry = await openRegistry(db);
  const logger = opts.logger ?? createLogger("key-service", "silent");
  const service = await createKeyService({
    registry,
    keysDir,
    redisUrl: opts.redisUrl,
    adminToken: opts.adminToken,
    adminTokenFile: path.join(dir, "admin-token"),
    clock: opts.clock ?? Date.now,
    logger,
    ...(opts.webhooks && { webhooks: opts.webhooks }),
  });
  const server = createKeyServiceServer(service.app, logger);
  const port = await listen(server, 0, "127.0.0.1");
  let stopped: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    adminToken: service.bootstrap.token,
    db,
    keysDir,
    registry,
    operations: service.operations,
    service,
    server,
    stop: () =>
      (stopped ??= (async () => {
        service.markStopping();
        await service.feed.follower.close();
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await service.close();
        rmSync(dir, { recursive: true, force: true });
      })()),
  };
}

/** For one test file: a key service started before its tests (`opts()` read then) and stopped after them. */
export function useKeyService(opts: () => StartKeyServiceOptions = () => ({})): () => RunningKeyService {
  let running: RunningKeyService | undefined;
  beforeAll(async () => {
    running = await startKeyService(opts());
  });
  afterAll(async () => {
    await running?.stop();
  });
  return () => {
    if (!running) throw new Error("the key service is not started (useKeyService runs in beforeAll)");
    return running;
  };
}

/** The real key-service process (`node keys/main.ts`), as operators run it. */
export interface KeyServiceProcess {
  url: string;
  child: ChildProcess;
  /** Everything it wrote on stdout (JSON logs) and stderr so far. */
  output(): string;
  exited: Promise<number | null>;
}

/**
 * Starts `node keys/main.ts` with `env` (KEYS_DB, KEYS_DIR, KEYS_ADMIN_TOKEN… on top of a free
 * KEYS_PORT on loopback) and resolves once /healthz answers; rejects with its output if it exits or
 * does not listen within 20 s.
 */
export async function spawnKeyService(env: Record<string, string>): Promise<KeyServiceProcess> {
  const port = env.KEYS_PORT ? Number(env.KEYS_PORT) : await freePort();
  const { child, output, exited } = launchNode("keys/main.ts", { KEYS_HOST: "127.0.0.1", KEYS_PORT: String(port), ...env });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`key service exited at start: ${output()}`);
    try {
      await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2_000) });
      break;
    } catch {
      if (Date.now() > deadline) {
        child.kill("SIGKILL");
        throw new Error(`key service did not listen: ${output()}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return { url, child, output, exited: exited.then((e) => e.code) };
}

export interface AdminAnswer {
  status: number;
  headers: Headers;
  /** The parsed JSON body (undefined when there is none or it is not JSON). */
  body: any;
  text: string;
}

/**
 * One admin API request: `token` as the bearer (none when null), `body` sent as JSON (a string as
 * is). `fetchImpl`: a recording fetch (testkit/admin-openapi.ts) to check the answer against the
 * description.
 */
export async function adminRequest(
  url: string,
  method: string,
  path: string,
  opts: { token?: string | null; body?: unknown; headers?: Record<string, string>; fetchImpl?: typeof fetch } = {},
): Promise<AdminAnswer> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.Authorization = `Bearer ${opts.token}`;
  let body: string | undefined;
  if (opts.body !== undefined) {
    body = typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body);
    headers["Content-Type"] ??= "application/json";
  }
  const res = await (opts.fetchImpl ?? fetch)(`${url}${path}`, { method, headers, ...(body !== undefined && { body }) });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed, text };
}
