import { afterEach, describe, expect, it } from "vitest";
import { SHUTDOWN_DEADLINE_MS } from "../../../pet-service/config.ts";
import { freePort } from "../../../testkit/net.ts";
import { startSilentCollector } from "../../../testkit/otlp-receiver.ts";
import { droppedLines, fullPipe } from "../../../testkit/output-faults.ts";
import { petClient, spawnPetService, stopWhileCallHeld, type PetClient, type SpawnedPetService } from "../../../testkit/pet-service.ts";
import { closeReader } from "../../../testkit/process.ts";
import { until } from "../../../testkit/until.ts";

// Issue 36: told to stop while a client holds a call open, and its stdout's reader gone (or its
// pipe full) during the drain, the pet service still ends within its deadline. It used to retry
// writing its last line ("pet-service stopped") into the broken pipe for ever, inside process.exit.
// A file on a full disk: tests/faults/pet-service/stop-stdout-full-disk.test.ts.
const running: SpawnedPetService[] = [];
const clients: PetClient[] = [];
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  await Promise.all(running.splice(0).map((s) => s.stop()));
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

async function start(opts: { stdout?: number; env?: Record<string, string> } = {}): Promise<{ service: SpawnedPetService; client: PetClient }> {
  const service = await spawnPetService({ ...opts, ...(opts.stdout !== undefined && { port: await freePort() }) });
  running.push(service);
  const client = petClient(service.address);
  clients.push(client);
  await client.create({ name: "warm-up", categoryId: "1" });
  return { service, client };
}

describe("told to stop while a call is held open", { timeout: 60_000 }, () => {
  // Repeated: whether the last lines still wait in the logger when the process exits depends on how
  // fast the drain ends, so one round may miss what another catches.
  it.each([1, 2, 3, 4, 5])("its stdout's reader gone: exit code 0 within its deadline, and what it could not log said on stderr (round %i)", async () => {
    const { service, client } = await start();
    const { answer, ended } = await stopWhileCallHeld(service, client, { whileDraining: () => closeReader(service.child.stdout!), deadlineMs: SHUTDOWN_DEADLINE_MS });
    expect(answer).toMatchObject({ name: "held open" });
    expect(ended).toEqual({ code: 0, signal: null });
    expect(service.output()).toMatch(droppedLines("pet-service", "EPIPE"));
  });

  it("its stdout a full pipe nobody reads: exit code 0 within its deadline, and what it could not log said on stderr", async () => {
    const pipe = fullPipe();
    cleanups.push(() => pipe.close());
    const { service, client } = await start({ stdout: pipe.fd });
    const { answer, ended } = await stopWhileCallHeld(service, client, { deadlineMs: SHUTDOWN_DEADLINE_MS });
    expect(answer).toMatchObject({ name: "held open" });
    expect(ended).toEqual({ code: 0, signal: null });
    expect(service.output()).toMatch(droppedLines("pet-service", "EAGAIN"));
  });
});

describe("a shutdown that cannot finish in time", { timeout: 60_000 }, () => {
  it("its last spans' collector never answers and its stdout's reader goes once the drain is over: it is gone at its deadline, ended by SIGTERM's default action", async () => {
    const collector = await startSilentCollector();
    cleanups.push(() => collector.close());
    // Exporting the last spans at shutdown would wait a minute.
    const { service, client } = await start({
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_EXPORTER_OTLP_TIMEOUT: "60000", OTEL_BSP_EXPORT_TIMEOUT: "60000" },
    });
    const { ended } = await stopWhileCallHeld(service, client, {
      // Nothing is logged after the held call's line until the deadline: the deadline's own line is
      // the first to find the reader gone, and the process exits with it still waiting.
      afterAnswer: async () => {
        await until("the held call's line is read", () => service.output().split('"rpc":"CreatePet"').length > 2);
        await closeReader(service.child.stdout!);
      },
      // The deadline runs from the signal, which lands a moment after this process sends it.
      deadlineMs: SHUTDOWN_DEADLINE_MS + 5_000,
    });
    expect(ended).toEqual({ code: null, signal: "SIGTERM" });
    expect(service.output()).toMatch(droppedLines("pet-service", "EPIPE"));
  });
});
