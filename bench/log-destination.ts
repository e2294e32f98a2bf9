/**
 * `npm run bench:logger`: what a log line costs through lib/log-destination.ts (sonic-boom 5, with
 * issue 36's accounting of what waits) against the destination it replaced (pino.destination, the
 * sonic-boom 4 pino brings, with the same 10 ms timer), in alternating rounds in this one process.
 * Lines are pet-service call lines through pino (about 180 bytes) into a file, at two paces:
 *
 *   - burst: 50 lines per turn of the event loop, as under load: batches fill 4 KiB and more;
 *   - paced: one line per millisecond: batches close on the 10 ms timer.
 *
 * Columns: lines per second (wall), CPU-µs per line (this process, thread pool included), and what
 * the batching does: writes per second, per 1,000 lines, and bytes per write (fs.write calls counted).
 *
 *   node bench/log-destination.ts [--rounds 10] [--lines 100000]
 *
 * Differences below the machine's noise are counted instead: `--write-path before|after` writes
 * --lines lines into /dev/null in one turn of the event loop and lets them be written out, nothing
 * else; per-line instructions come from two runs with different --lines, e.g.
 *
 *   valgrind --tool=callgrind --callgrind-out-file=/dev/null node bench/log-destination.ts --write-path after --lines 5000
 */
import fs from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import pino, { type DestinationStream } from "pino";
import { batchedDestination } from "../lib/log-destination.ts";
import { cpuSince, fmt, median, today } from "../testkit/stats.ts";

const { values } = parseArgs({
  options: { rounds: { type: "string", default: "10" }, lines: { type: "string", default: "100000" }, "write-path": { type: "string" } },
});
const ROUNDS = Number(values.rounds);
const LINES = Number(values.lines);
const PACED_LINES = Math.min(LINES, 2_000);

/** The destination before issue 36 (lib/logger.ts at d0e7f23), for comparison only. */
function before(fd: number): ReturnType<typeof pino.destination> {
  const stream = pino.destination({ dest: fd, sync: false, minLength: 4096 });
  const write = stream.write.bind(stream);
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    timer = undefined;
    stream.flush();
  };
  stream.write = (data: string) => {
    const accepted = write(data);
    timer ??= setTimeout(flush, 10).unref();
    return accepted;
  };
  return stream;
}

/** Each variant as a pino destination, and how to wait until every line it was given is written. */
const variants: Record<string, (fd: number) => { destination: DestinationStream; written(): Promise<void> }> = {
  "before: pino.destination, sonic-boom 4.2.1": (fd) => {
    const destination = before(fd);
    // flush's callback can come with under 4 KiB still waiting (4.x): what is left goes synchronously.
    return { destination, written: () => new Promise<void>((resolve) => destination.flush(() => resolve())).then(() => destination.flushSync()) };
  },
  "lib/log-destination.ts, sonic-boom 5.0.2": (fd) => {
    const destination = batchedDestination(fd, "bench");
    return { destination, written: () => destination.settle(60_000) };
  },
};

if (values["write-path"] === undefined) await compare();
else writePath(values["write-path"]);

/** For instruction counts: LINES lines through one destination into /dev/null, in one turn of the event loop. */
function writePath(which: string): void {
  const make = Object.values(variants)[["before", "after"].indexOf(which)];
  if (!make) throw new Error(`--write-path before|after, not ${JSON.stringify(which)}`);
  const { destination } = make(fs.openSync("/dev/null", "w"));
  const line = `${JSON.stringify({ level: 30, time: Date.now(), pid: process.pid, hostname: os.hostname(), name: "pet-service", rpc: "ListPets", requestId: "bench-1", code: "OK", ms: 0.42, msg: "call" })}\n`;
  for (let i = 0; i < LINES; i++) destination.write(line);
}

async function compare(): Promise<void> {
  // Every fs.write of the bench's file, counted: sonic-boom calls fs.write through this same object.
  let writes = 0;
  let written = 0;
  let benchFd = -1;
  const fsWrite = fs.write;
  fs.write = ((fd: number, buffer: string | NodeJS.ArrayBufferView, ...rest: unknown[]) => {
    if (fd === benchFd) writes++, (written += typeof buffer === "string" ? Buffer.byteLength(buffer) : buffer.byteLength);
    return (fsWrite as (...args: unknown[]) => void)(fd, buffer, ...rest);
  }) as typeof fs.write;

  const turn = () => new Promise<void>((resolve) => setImmediate(resolve));
  const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
  const paces: Record<string, { lines: number; run(log: pino.Logger, lines: number): Promise<void> }> = {
    burst: {
      lines: LINES,
      async run(log, lines) {
        for (let i = 0; i < lines; i += 50) {
          for (let j = i; j < i + 50; j++) log.info({ rpc: "ListPets", requestId: `bench-${j}`, code: "OK", ms: 0.42, caller: "gateway" }, "call");
          await turn();
        }
      },
    },
    paced: {
      lines: PACED_LINES,
      async run(log, lines) {
        for (let j = 0; j < lines; j++) {
          log.info({ rpc: "ListPets", requestId: `bench-${j}`, code: "OK", ms: 0.42, caller: "gateway" }, "call");
          await sleep(1);
        }
      },
    },
  };

  const dir = await mkdtemp(path.join(os.tmpdir(), "log-destination-"));
  const results = new Map<string, { perSecond: number[]; cpu: number[]; writesPerSecond: number[]; writesPerK: number[]; bytesPerWrite: number[] }>();
  const open: number[] = [];
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const [pace, { lines, run }] of Object.entries(paces)) {
        for (const [name, make] of round % 2 ? Object.entries(variants).reverse() : Object.entries(variants)) {
          // A file of its own, left open: a variant's timer may still fire after the round.
          const file = path.join(dir, `${round}-${pace}-${Object.keys(variants).indexOf(name)}.log`);
          benchFd = fs.openSync(file, "w");
          open.push(benchFd);
          const { destination, written: allWritten } = make(benchFd);
          const log = pino({ name: "pet-service", base: { pid: process.pid, hostname: os.hostname() } }, destination);
          writes = written = 0;
          const cpu = process.cpuUsage();
          const started = performance.now();
          await run(log, lines);
          await allWritten();
          const wallMs = performance.now() - started;
          const used = cpuSince(cpu);
          const row = results.get(`${pace}|${name}`) ?? { perSecond: [], cpu: [], writesPerSecond: [], writesPerK: [], bytesPerWrite: [] };
          row.perSecond.push(lines / (wallMs / 1000));
          row.writesPerSecond.push(writes / (wallMs / 1000));
          row.cpu.push(used / lines);
          row.writesPerK.push((writes / lines) * 1000);
          row.bytesPerWrite.push(written / Math.max(writes, 1));
          results.set(`${pace}|${name}`, row);
          // What the variant wrote is what it was given.
          const got = fs.readFileSync(file, "utf8").split("\n").length - 1;
          if (got !== lines) throw new Error(`${name} (${pace}): ${got} lines written of ${lines}`);
          fs.rmSync(file);
        }
      }
    }
  } finally {
    await sleep(50);
    for (const fd of open) fs.closeSync(fd);
    await rm(dir, { recursive: true, force: true });
  }

  process.stdout.write(
    [
      `One pino logger's lines into a file, medians of ${ROUNDS} alternating rounds (burst: ${fmt(LINES)} lines, 50 per turn of the event loop; ` +
        `paced: ${fmt(PACED_LINES)} lines, one per ms). ${today()}, Node ${process.version}.`,
      "",
      "| pace | destination | lines/s | CPU-µs/line | writes/s | writes per 1,000 lines | bytes/write |",
      "|---|---|---:|---:|---:|---:|---:|",
      ...[...results].map(([key, r]) => {
        const [pace, name] = key.split("|");
        return `| ${pace} | ${name} | ${fmt(median(r.perSecond))} | ${fmt(median(r.cpu), 2)} | ${fmt(median(r.writesPerSecond))} | ${fmt(median(r.writesPerK), 1)} | ${fmt(median(r.bytesPerWrite))} |`;
      }),
      "",
    ].join("\n"),
  );
}
