/**
 * `npm run bench:handler`: CPU per ListPets(limit=20) call of the pet service's own work, without
 * the transport: the real handlers (rules, SQLite store, paging, proto mapping, per-call log line)
 * called in this process, 32 calls in flight, in alternating rounds, with the log line going
 *
 *   - nowhere (level silent): the floor;
 *   - to a file through lib/log-destination.ts (batched: 4 KiB or 10 ms);
 *   - to a file through pino's default asynchronous destination (a write per line while none
 *     is in flight), for contrast.
 *
 *   node bench/pet-handler.ts [--rounds 10] [--calls 1500]
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import * as grpc from "@grpc/grpc-js";
import pino from "pino";
import { batchedDestination } from "../lib/log-destination.ts";
import { petServiceHandlers } from "../pet-service/handlers.ts";
import { SqlitePetStore } from "../pet-service/store/sqlite/store.ts";
import { cpuSince, fmt, median, today } from "../testkit/stats.ts";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "10" }, calls: { type: "string", default: "1500" } } });
const ROUNDS = Number(values.rounds);
const CALLS = Number(values.calls);
const IN_FLIGHT = 32;

const dir = await mkdtemp(path.join(os.tmpdir(), "pet-handler-"));
try {
  const store = await SqlitePetStore.open(path.join(dir, "pets.sqlite"));
  for (let i = 1; i <= 20; i++) await store.create({ name: `Seed pet ${i}`, categoryId: 1n, status: "available" });
  const file = (name: string) => path.join(dir, `${name}.log`);
  const logger = (destination: pino.DestinationStream) => pino({ name: "pet-service", level: "info" }, destination);
  const variants: Record<string, grpc.UntypedServiceImplementation> = {
    "no log line (silent)": petServiceHandlers({ store, logger: pino({ level: "silent" }) }),
    "batched (lib/log-destination.ts)": petServiceHandlers({
      store,
      logger: logger(batchedDestination(file("batched"))),
    }),
    "pino's default asynchronous": petServiceHandlers({ store, logger: logger(pino.destination({ dest: file("default"), sync: false })) }),
  };
  const metadata = new grpc.Metadata();
  metadata.set("x-request-id", "bench-handler");
  const request = { limit: 20, status: "PET_STATUS_UNSPECIFIED", pageToken: "" };
  const call = (handler: grpc.UntypedHandleCall) =>
    new Promise<void>((resolve, reject) =>
      (handler as grpc.handleUnaryCall<unknown, unknown>)({ request, metadata } as grpc.ServerUnaryCall<unknown, unknown>, (err) =>
        err ? reject(err) : resolve(),
      ),
    );

  const results = new Map<string, number[]>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, handlers] of round % 2 ? Object.entries(variants).reverse() : Object.entries(variants)) {
      const cpu = process.cpuUsage();
      let started = 0;
      await new Promise<void>((resolve, reject) => {
        let done = 0;
        const next = (): void => {
          started++;
          call(handlers.ListPets!).then(() => (++done === CALLS ? resolve() : started < CALLS && next()), reject);
        };
        for (let i = 0; i < IN_FLIGHT; i++) next();
      });
      results.set(name, [...(results.get(name) ?? []), cpuSince(cpu) / CALLS]);
    }
  }
  await store.close();
  process.stdout.write(
    [
      `The pet service's ListPets(limit=20) handler in-process (no gRPC), ${IN_FLIGHT} calls in flight, CPU-µs per call: ` +
        `medians of ${ROUNDS} alternating rounds × ${fmt(CALLS)}. ${today()}, Node ${process.version}.`,
      "",
      "| log line | CPU-µs/call |",
      "|---|---:|",
      ...[...results].map(([name, us]) => `| ${name} | ${fmt(median(us))} |`),
      "",
    ].join("\n"),
  );
} finally {
  await rm(dir, { recursive: true, force: true });
}
