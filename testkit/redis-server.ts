import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Redis } from "ioredis";
import { freePort } from "./net.ts";
import { until } from "./until.ts";

/**
 * A private redis-server for one test file: a free port, nothing persisted (a replica's sync
 * file goes to a temporary directory of its own, removed at stop). Tests only ever talk to
 * (and flush) servers they started here, never a shared one.
 */
export interface PrivateRedis {
  port: number;
  url: string;
  process: ChildProcess;
  /** SIGKILL the server (outage tests); `start()` brings it back on the same port. */
  kill(): Promise<void>;
  start(): Promise<void>;
  stop(): Promise<void>;
}

export interface RedisServerOptions {
  /** More redis-server arguments (cluster mode, replicaof, a working directory, …). */
  args?: readonly string[];
  /** A config file, given first (Sentinel: `redis-server <file> --sentinel`). */
  configFile?: string;
}

export async function startRedis(opts: RedisServerOptions = {}): Promise<PrivateRedis> {
  const dir = mkdtempSync(path.join(tmpdir(), "petstore-redis-"));
  const handle: PrivateRedis = {
    port: 0,
    url: "",
    process: undefined as unknown as ChildProcess,
    async kill() {
      await killAndWait(handle.process, "SIGKILL");
    },
    async start() {
      handle.process = spawn(
        "redis-server",
        [
          ...(opts.configFile ? [opts.configFile] : []),
          "--port", String(handle.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--logfile", "", "--dir", dir,
          ...(opts.args ?? []),
        ],
        { stdio: "ignore" },
      );
      await waitForOwnServer(handle.process, handle.port);
    },
    async stop() {
      await killAndWait(handle.process, "SIGTERM");
      rmSync(dir, { recursive: true, force: true });
    },
  };
  // A port free a moment ago may be taken by another test's server before ours binds it: then
  // ours exits, and the test must get a port of its own, never talk to (or flush) the other's.
  for (let attempt = 1; ; attempt++) {
    handle.port = await freePort();
    handle.url = `redis://127.0.0.1:${handle.port}`;
    try {
      await handle.start();
      return handle;
    } catch (err) {
      if (!(err instanceof PortTaken) || attempt === 5) throw err;
    }
  }
}

class PortTaken extends Error {}

async function killAndWait(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    child.once("exit", () => resolve());
    child.kill(signal);
  });
}

/** Waits until the redis-server on `port` is `child` (INFO's process_id), or throws PortTaken once `child` exits. */
async function waitForOwnServer(child: ChildProcess, port: number): Promise<void> {
  const serverPid = (info: string) => Number(/^process_id:(\d+)/m.exec(info)?.[1]);
  await until(`redis-server on port ${port} answers`, async () => {
    if (child.exitCode !== null || child.signalCode !== null) throw new PortTaken(`redis-server could not listen on ${port}`);
    return (await withRedisClient(port, (c) => c.info("server")).then(serverPid, () => undefined)) === child.pid;
  }, 10_000, 50);
}

/** Runs `fn` with a one-off connection to the redis-server on `port` (admin commands; no retries). */
export async function withRedisClient<T>(port: number, fn: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis(port, "127.0.0.1", { maxRetriesPerRequest: 0, retryStrategy: () => null, lazyConnect: true });
  client.on("error", () => {});
  try {
    await client.connect();
    return await fn(client);
  } finally {
    client.disconnect();
  }
}

/**
 * Records, with MONITOR, the commands clients send while `fn` runs; commands that scripts run
 * inside Redis (source "lua") are not requests and are left out, and so are those `only` refuses.
 */
export async function clientCommands(admin: Redis, fn: () => Promise<void>, only?: (args: string[]) => boolean): Promise<string[]> {
  const monitor = await admin.monitor();
  const seen: string[] = [];
  const marker = `end-${Math.random()}`;
  const done = new Promise<void>((resolve) =>
    monitor.on("monitor", (_time: string, args: string[], source: string) => {
      if (args[1] === marker) resolve();
      else if (source !== "lua" && (!only || only(args))) seen.push(args[0]!.toLowerCase());
    }),
  );
  try {
    await fn();
    await admin.echo(marker);
    await done;
  } finally {
    monitor.disconnect();
  }
  return seen;
}
