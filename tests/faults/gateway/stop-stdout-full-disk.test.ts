/**
 * Issue 36: a gateway whose stdout is a file on a full disk (a tmpfs the test mounts and fills), told
 * to stop while a client holds a request open, is gone within its deadline and says on stderr what
 * it could not log. A reader gone and a full pipe: tests/integration/gateway/ops/stop-stdout-faults.test.ts.
 */
import { afterEach, expect, it } from "vitest";
import { loadGatewayConfig, shutdownDeadlineMs } from "../../../gateway/config.ts";
import { createTestKeys, type TestKeys } from "../../../testkit/gateway.ts";
import { spawnGateway, stopWhileRequestHeld, type GatewayProcess } from "../../../testkit/gateway-process.ts";
import { mountRefusal } from "../../../testkit/mounts.ts";
import { droppedLines, fileOnFullDisk, type Output } from "../../../testkit/output-faults.ts";
import { startPetService, type RunningPetService } from "../../../testkit/pet-service.ts";

const refusal = await mountRefusal();
if (refusal) console.error(`\n!!! A FULL DISK UNDER STDOUT NOT TESTED: this machine does not let the tests mount file systems (${refusal}).\n`);

let pets: RunningPetService | undefined;
let keys: TestKeys | undefined;
let gateway: GatewayProcess | undefined;
let output: Output | undefined;
afterEach(async () => {
  if (gateway?.child.exitCode === null) gateway.child.kill("SIGKILL");
  await gateway?.exited;
  await output?.close();
  await pets?.stop();
  await keys?.remove();
});

it.skipIf(refusal !== undefined)("exit code 0 within its deadline, and what it could not log said on stderr (ENOSPC)", async () => {
  [pets, keys] = await Promise.all([startPetService(), createTestKeys()]);
  output = await fileOnFullDisk();
  gateway = await spawnGateway({ PET_SERVICE_ADDR: pets.address, ...keys.gatewayEnv }, { stdout: output.fd });
  const key = await keys.issue({ plan: "business" });
  const { status, ended } = await stopWhileRequestHeld(gateway, key, { deadlineMs: shutdownDeadlineMs(loadGatewayConfig({})) });
  expect(status).toBe(201);
  expect(ended).toEqual({ code: 0, signal: null });
  expect(gateway.output()).toMatch(droppedLines("gateway", "ENOSPC"));
});
