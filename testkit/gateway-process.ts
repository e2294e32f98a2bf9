import type { ChildProcess } from "node:child_process";
import { afterAll, beforeAll } from "vitest";
import { createTestKeys, type TestKeys } from "./gateway.ts";
import { freePort } from "./net.ts";
import { startPetService, type RunningPetService } from "./pet-service.ts";
import { launchNode } from "./process.ts";
import { until } from "./until.ts";

/** The real gateway process (`node gateway/main.ts`), as operators run it. */
export interface GatewayProcess {
  url: string;
  child: ChildProcess;
  /** Everything it wrote on stdout (JSON logs) and stderr so far. */
  output(): string;
  exited: Promise<number | null>;
}

export async function spawnGateway(env: Record<string, string>): Promise<GatewayProcess> {
  const port = await freePort();
  const { child, output, exited } = launchNode("gateway/main.ts", { GATEWAY_HOST: "127.0.0.1", GATEWAY_PORT: String(port), ...env });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`gateway exited at start: ${output()}`);
    try {
      await fetch(`${url}/healthz`);
      break;
    } catch {
      if (Date.now() > deadline) throw new Error(`gateway did not listen: ${output()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return { url, child, output, exited: exited.then((e) => e.code) };
}

/**
 * For one test file: a pet service, a KEYS_DIR and the real gateway process in front of them
 * (`env` on top), started before the tests and stopped after them.
 */
export function useGatewayProcess(env: Record<string, string>): { gateway(): GatewayProcess; keys(): TestKeys } {
  let pets: RunningPetService;
  let keys: TestKeys;
  let gateway: GatewayProcess;
  beforeAll(async () => {
    [pets, keys] = await Promise.all([startPetService(), createTestKeys()]);
    gateway = await spawnGateway({ PET_SERVICE_ADDR: pets.address, KEYS_DIR: keys.dir, ...env });
  });
  afterAll(async () => {
    gateway?.child.kill("SIGTERM");
    await gateway?.exited;
    await pets?.stop();
    await keys?.remove();
  });
  return { gateway: () => gateway, keys: () => keys };
}

/** The live replicas a gateway process last logged (its heartbeat logs each change), undefined before the first. */
export function loggedReplicas(gateway: GatewayProcess): number | undefined {
  let replicas: number | undefined;
  for (const line of gateway.output().split("\n")) {
    if (!line.includes('"live gateway replicas"')) continue;
    replicas = (JSON.parse(line) as { replicas: number }).replicas;
  }
  return replicas;
}

/**
 * For one test file: a pet service, a KEYS_DIR and `count` real gateway processes on the Redis at
 * `redisUrl()` (`env` on top), started before the tests once each heartbeat counts them all, and
 * stopped after them.
 */
export function useGatewayProcesses(count: number, redisUrl: () => string, env: Record<string, string> = {}): { gateways(): GatewayProcess[]; keys(): TestKeys } {
  let pets: RunningPetService;
  let keys: TestKeys;
  let gateways: GatewayProcess[] = [];
  beforeAll(async () => {
    [pets, keys] = await Promise.all([startPetService(), createTestKeys()]);
    const all = { PET_SERVICE_ADDR: pets.address, KEYS_DIR: keys.dir, REDIS_URL: redisUrl(), LOG_LEVEL: "info", ...env };
    gateways = await Promise.all(Array.from({ length: count }, () => spawnGateway(all)));
    await until("every heartbeat counts every gateway", () => gateways.every((g) => loggedReplicas(g) === count));
  });
  afterAll(async () => {
    for (const g of gateways) g.child.kill("SIGTERM");
    await Promise.all(gateways.map((g) => g.exited));
    await pets?.stop();
    await keys?.remove();
  });
  return { gateways: () => gateways, keys: () => keys };
}
