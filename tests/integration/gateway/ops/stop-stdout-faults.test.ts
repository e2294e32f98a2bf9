import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { loadGatewayConfig, shutdownDeadlineMs } from "../../../../gateway/config.ts";
import { createTestKeys, type TestKeys } from "../../../../testkit/gateway.ts";
import { spawnGateway, stopWhileRequestHeld, type GatewayProcess } from "../../../../testkit/gateway-process.ts";
import { startSilentCollector } from "../../../../testkit/otlp-receiver.ts";
import { droppedLines, fullPipe } from "../../../../testkit/output-faults.ts";
import { startPetService, type RunningPetService } from "../../../../testkit/pet-service.ts";
import { closeReader } from "../../../../testkit/process.ts";
import { until } from "../../../../testkit/until.ts";

// Issue 36: told to stop while a client holds a request open, and its stdout's reader gone (or its
// pipe full) during the drain, the gateway still ends within its deadline. It used to retry writing
// its last line ("gateway stopped") into the broken pipe for ever, inside process.exit.
// A file on a full disk: tests/faults/gateway/stop-stdout-full-disk.test.ts.
const SHUTDOWN_GRACE_MS = "4000";
const DEADLINE_MS = shutdownDeadlineMs(loadGatewayConfig({ SHUTDOWN_GRACE_MS }));

let pets: RunningPetService;
let keys: TestKeys;
let key: string;
const running: GatewayProcess[] = [];
const cleanups: (() => unknown)[] = [];

beforeAll(async () => {
  [pets, keys] = await Promise.all([startPetService(), createTestKeys()]);
  key = await keys.issue({ plan: "enterprise", perMinute: 100, perDay: 1000 });
});
afterEach(async () => {
  for (const gateway of running.splice(0)) if (gateway.child.exitCode === null) gateway.child.kill("SIGKILL");
  for (const cleanup of cleanups.splice(0)) await cleanup();
});
afterAll(async () => {
  await pets?.stop();
  await keys?.remove();
});

async function start(env: Record<string, string> = {}, stdout?: number): Promise<GatewayProcess> {
  const gateway = await spawnGateway({ PET_SERVICE_ADDR: pets.address, ...keys.gatewayEnv, SHUTDOWN_GRACE_MS, ...env }, stdout === undefined ? {} : { stdout });
  running.push(gateway);
  return gateway;
}

describe("told to stop while a request is held open", { timeout: 60_000 }, () => {
  // Repeated: whether the last lines still wait in the logger when the process exits depends on how
  // fast the closing ends, so one round may miss what another catches.
  it.each([1, 2, 3, 4, 5])("its stdout's reader gone: exit code 0 within its deadline, and what it could not log said on stderr (round %i)", async () => {
    const gateway = await start();
    const { status, ended } = await stopWhileRequestHeld(gateway, key, { whileDraining: () => closeReader(gateway.child.stdout!), deadlineMs: DEADLINE_MS });
    expect(status).toBe(201);
    expect(ended).toEqual({ code: 0, signal: null });
    expect(gateway.output()).toMatch(droppedLines("gateway", "EPIPE"));
  });

  it("its stdout a full pipe nobody reads: exit code 0 within its deadline, and what it could not log said on stderr", async () => {
    const pipe = fullPipe();
    cleanups.push(() => pipe.close());
    const gateway = await start({}, pipe.fd);
    const { status, ended } = await stopWhileRequestHeld(gateway, key, { deadlineMs: DEADLINE_MS });
    expect(status).toBe(201);
    expect(ended).toEqual({ code: 0, signal: null });
    expect(gateway.output()).toMatch(droppedLines("gateway", "EAGAIN"));
  });
});

describe("a shutdown that cannot finish in time", { timeout: 60_000 }, () => {
  it("its last spans' collector never answers and its stdout's reader goes once the drain is over: it is gone at its deadline, ended by SIGTERM's default action", async () => {
    const collector = await startSilentCollector();
    cleanups.push(() => collector.close());
    // Exporting the last spans at shutdown would wait a minute.
    const gateway = await start({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_EXPORTER_OTLP_TIMEOUT: "60000", OTEL_BSP_EXPORT_TIMEOUT: "60000" });
    const { ended } = await stopWhileRequestHeld(gateway, key, {
      // Nothing is logged after the held request's line until the deadline: the deadline's own line
      // is the first to find the reader gone, and the process exits with it still waiting.
      afterAnswer: async () => {
        await until("the held request's line is read", () => /"method":"POST"[^\n]*"status":201/.test(gateway.output()));
        await closeReader(gateway.child.stdout!);
      },
      // The deadline runs from the signal, which lands a moment after this process sends it.
      deadlineMs: DEADLINE_MS + 5_000,
    });
    expect(ended).toEqual({ code: null, signal: "SIGTERM" });
    expect(gateway.output()).toMatch(droppedLines("gateway", "EPIPE"));
  });
});
