import { Worker } from "node:worker_threads";
import { expect, it } from "vitest";
import { threadCpuMicros } from "../../../testkit/cpu.ts";

it("threadCpuMicros tells a busy worker thread's CPU from the main thread's", async () => {
  const before = threadCpuMicros(process.pid);
  // Spins 400 ms, then idles, still alive: an ended thread no longer counts.
  const spinning = new Worker(
    "const end = Date.now() + 400; while (Date.now() < end); require('node:worker_threads').parentPort.postMessage('done'); setInterval(() => {}, 1000);",
    { eval: true },
  );
  await new Promise((resolve) => spinning.once("message", resolve));
  const after = threadCpuMicros(process.pid);
  await spinning.terminate();
  const used = (kind: string) => (after.get(kind) ?? 0) - (before.get(kind) ?? 0);
  expect(used("WorkerThread")).toBeGreaterThanOrEqual(300_000);
  expect(used("main")).toBeLessThan(300_000);
});
