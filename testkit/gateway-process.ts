import type { ChildProcess } from "node:child_process";
import { once } from "node:events";
import http from "node:http";
import { afterAll, beforeAll } from "vitest";
import { createTestKeys, keyStateLoaded, type TestKeys } from "./gateway.ts";
import { freePort } from "./net.ts";
import { startPetService, type RunningPetService } from "./pet-service.ts";
import { exitWithin, launchNode, untilListening, type Ended } from "./process.ts";
import { until } from "./until.ts";

/** The real gateway process (`node gateway/main.ts`), as operators run it. */
export interface GatewayProcess {
  url: string;
  child: ChildProcess;
  /** Everything it wrote on stdout (JSON logs) and stderr so far. */
  output(): string;
  exited: Promise<number | null>;
}

/**
 * `opts.stdout`: a descriptor for its stdout (testkit/output-faults.ts) instead of a pipe this
 * process reads. Resolves once it listens and (unless `opts.cold`) has loaded the key service's state.
 */
export async function spawnGateway(env: Record<string, string>, opts: { stdout?: number; cold?: boolean } = {}): Promise<GatewayProcess> {
  const port = await freePort();
  const launched = launchNode("gateway/main.ts", { GATEWAY_HOST: "127.0.0.1", GATEWAY_PORT: String(port), ...env }, [], opts);
  const { child, output, exited } = launched;
  const url = `http://127.0.0.1:${port}`;
  await untilListening(launched, url, "gateway");
  if (!opts.cold) await until("the gateway loaded the key service's state", () => keyStateLoaded(url));
  return { url, child, output, exited: exited.then((e) => e.code) };
}

/**
 * For one test file: a pet service, a key service (in this process) and the real gateway process
 * in front of them (`env` on top), started before the tests and stopped after them.
 */
export function useGatewayProcess(env: Record<string, string>): { gateway(): GatewayProcess; keys(): TestKeys } {
  let pets: RunningPetService;
  let keys: TestKeys;
  let gateway: GatewayProcess;
  beforeAll(async () => {
    [pets, keys] = await Promise.all([startPetService(), createTestKeys()]);
    gateway = await spawnGateway({ PET_SERVICE_ADDR: pets.address, ...keys.gatewayEnv, ...env });
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
 * For one test file: a pet service, a key service (publishing to the same Redis) and `count` real
 * gateway processes on the Redis at `redisUrl()` (`env` on top), started before the tests once
 * each heartbeat counts them all, and stopped after them.
 */
export function useGatewayProcesses(count: number, redisUrl: () => string, env: Record<string, string> = {}): { gateways(): GatewayProcess[]; keys(): TestKeys } {
  let pets: RunningPetService;
  let keys: TestKeys;
  let gateways: GatewayProcess[] = [];
  beforeAll(async () => {
    [pets, keys] = await Promise.all([startPetService(), createTestKeys({ redisUrl: redisUrl() })]);
    const all = { PET_SERVICE_ADDR: pets.address, ...keys.gatewayEnv, REDIS_URL: redisUrl(), LOG_LEVEL: "info", ...env };
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

/**
 * SIGTERM while a create's body is still arriving (made with `key`); once the gateway is shutting
 * down, `whileDraining` (what happens to the process's stdout, say), then the rest of the body is
 * sent; once the create is answered, `afterAnswer`. The create's status, and how the process ended
 * if it did within `deadlineMs` of the signal (exitWithin).
 */
export async function stopWhileRequestHeld(
  gateway: GatewayProcess,
  key: string,
  { whileDraining, afterAnswer, deadlineMs }: { whileDraining?: () => Promise<void>; afterAnswer?: () => Promise<void>; deadlineMs: number },
): Promise<{ status: number; ended: Ended }> {
  const req = http.request(`${gateway.url}/v1/pets`, {
    method: "POST",
    // 100 Continue says the request has reached the gateway.
    headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json", Expect: "100-continue" },
  });
  const response = once(req, "response") as Promise<[http.IncomingMessage]>;
  await once(req, "continue");
  req.write('{"name":"Held open",');

  const ended = exitWithin(gateway.child, deadlineMs);
  gateway.child.kill("SIGTERM");
  await until("the gateway is shutting down", async () => (await fetch(`${gateway.url}/readyz`).catch(() => undefined))?.status !== 200);
  await whileDraining?.();
  req.end('"categoryId":1}');
  const [res] = await response;
  res.resume();
  await afterAnswer?.();
  return { status: res.statusCode!, ended: await ended };
}
