/**
 * Issue 36: a pet service whose stdout is a file on a full disk (a tmpfs the test mounts and fills),
 * told to stop while a client holds a call open, is gone within its deadline and says on stderr what
 * it could not log. A reader gone and a full pipe: tests/integration/pet-service/stop-stdout-faults.test.ts.
 */
import { afterEach, expect, it } from "vitest";
import { SHUTDOWN_DEADLINE_MS } from "../../../pet-service/config.ts";
import { mountRefusal } from "../../../testkit/mounts.ts";
import { freePort } from "../../../testkit/net.ts";
import { droppedLines, fileOnFullDisk, type Output } from "../../../testkit/output-faults.ts";
import { petClient, spawnPetService, stopWhileCallHeld, type PetClient, type SpawnedPetService } from "../../../testkit/pet-service.ts";

const refusal = await mountRefusal();
if (refusal) console.error(`\n!!! A FULL DISK UNDER STDOUT NOT TESTED: this machine does not let the tests mount file systems (${refusal}).\n`);

let service: SpawnedPetService | undefined;
let client: PetClient | undefined;
let output: Output | undefined;
afterEach(async () => {
  client?.close();
  await service?.stop();
  await output?.close();
});

it.skipIf(refusal !== undefined)("exit code 0 within its deadline, and what it could not log said on stderr (ENOSPC)", async () => {
  output = await fileOnFullDisk();
  service = await spawnPetService({ port: await freePort(), stdout: output.fd });
  client = petClient(service.address);
  await client.create({ name: "warm-up", categoryId: "1" });
  const { answer, ended } = await stopWhileCallHeld(service, client, { deadlineMs: SHUTDOWN_DEADLINE_MS });
  expect(answer).toMatchObject({ name: "held open" });
  expect(ended).toEqual({ code: 0, signal: null });
  expect(service.output()).toMatch(droppedLines("pet-service", "ENOSPC"));
});
