import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { freePort } from "../../../testkit/net.ts";
import { spawnPetService, type SpawnedPetService } from "../../../testkit/pet-service.ts";
import { createTestKeys, startGateway, type RunningGateway, type TestKeys } from "../../../testkit/gateway.ts";
import { metricValue } from "../../../testkit/promql.ts";

let dir: string;
let keys: TestKeys;
let gateway: RunningGateway;
let port: number;
let pets: SpawnedPetService | undefined;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "petstore-outage-"));
  keys = await createTestKeys();
  port = await freePort();
  pets = await spawnPetService({ port, dbPath: path.join(dir, "pets.sqlite") });
  gateway = await startGateway({ petServiceAddr: `127.0.0.1:${port}`, keys });
});

afterAll(async () => {
  await gateway?.close();
  await pets?.kill("SIGKILL");
  await keys?.remove();
  await rm(dir, { recursive: true, force: true });
});

/** gateway_grpc_client_retries_total{method="ListPets"} as /metrics shows it now. */
async function listRetries(): Promise<number> {
  return (await metricValue(`${gateway.url}/metrics`, "gateway_grpc_client_retries_total", { method: "ListPets" })) ?? 0;
}

/** gateway_pet_service_serving as /metrics shows it now (the alert PetServiceNotServing reads it). */
async function servingGauge(): Promise<string | undefined> {
  const value = await metricValue(`${gateway.url}/metrics`, "gateway_pet_service_serving");
  return value === undefined ? undefined : String(value);
}

it("answers 503 service_unavailable while the pet service is down (gateway_pet_service_serving 0), and recovers without a restart", async () => {
  const key = await keys.issue();
  const list = () => fetch(`${gateway.url}/v1/pets`, { headers: { Authorization: `Bearer ${key}` } });
  expect((await list()).status).toBe(200);
  expect(await servingGauge()).toBe("1");

  await pets!.kill("SIGKILL");
  expect(await servingGauge()).toBe("0");
  const retriesBefore = await listRetries();
  for (let i = 0; i < 5; i++) {
    const res = await list();
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ code: "service_unavailable", status: 503 });
    expect(res.headers.get("retry-after")).toBe("1"); // a 503 always says when to retry
    // Rate-limit headers are on errors too.
    expect(res.headers.get("x-ratelimit-limit")).not.toBeNull();
  }
  // Each call was tried on the (only) address three times in all, then answered: bounded retries.
  expect((await listRetries()) - retriesBefore).toBe(5 * 2);

  pets = await spawnPetService({ port, dbPath: path.join(dir, "pets.sqlite") });
  let status = 0;
  for (let i = 0; i < 50 && status !== 200; i++) {
    status = (await list()).status;
    if (status !== 200) await new Promise((r) => setTimeout(r, 100));
  }
  expect(status).toBe(200);
  expect(await servingGauge()).toBe("1");
});
