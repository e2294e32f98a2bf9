import { Worker } from "node:worker_threads";
import { expect, it } from "vitest";
import { threadCpuMicros } from "../../../testkit/cpu.ts";

it("threadCpuMicros tells a busy worker thread's CPU from the main thread's", async () => {
  const before = threadCpuMicros(process.pid);
  // Spins until it has used 400 ms of its own CPU (not of the clock: on a loaded CI host 400 ms
  // of spinning got 290 ms of CPU), then idles, still alive: an ended thread no longer counts.
  const spinning = new Worker(
    "const used = () => { const { user, system } = process.threadCpuUsage(); return user + system; };" +
      "const end = used() + 400_000; while (used() < end); require('node:worker_threads').parentPort.postMessage('done'); setInterval(() => {}, 1000);",
    { eval: true },
  );
  await new Promise((resolve) => spinning.once("message", resolve));
  const after = threadCpuMicros(process.pid);
  await spinning.terminate();
  const used = (kind: string) => (after.get(kind) ?? 0) - (before.get(kind) ?? 0);
  expect(used("WorkerThread")).toBeGreaterThanOrEqual(300_000);
  expect(used("main")).toBeLessThan(300_000);
});
