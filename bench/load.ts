import { writeFileSync, readFileSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { cpuMeter } from "../testkit/cpu.ts";
import { runTool } from "./processes.ts";
import { cpuSince, percentile } from "../testkit/stats.ts";

/**
 * The load generators: wrk (HTTP/1.1, closed loop), h2load (gRPC over HTTP/2, closed loop) and an
 * open-loop generator at a constant offered rate. Each run also measures the CPU every named
 * process used while it ran (see cpu.ts) and the load generator's own.
 */

export interface HttpTarget {
  url: string;
  method?: "GET" | "POST";
  headers?: Record<string, string>;
  body?: string;
  /** The status every response must have. */
  status: number;
}

export interface Run {
  rps: number;
  /** Latency percentiles, ms. */
  p50: number;
  p99: number;
  requests: number;
  /** Responses with another status than expected, connection errors and timeouts. */
  failures: number;
  /** CPU µs per request of each measured process, and of the load generator ("load"). */
  cpuPerRequest: Record<string, number>;
}

export interface LoadOptions {
  durationSeconds: number;
  connections: number;
  /** Processes whose CPU is measured during the run, by name. */
  pids: Readonly<Record<string, number>>;
  /** Where the tools' scripts and logs go. */
  dir: string;
}

const perRequest = (cpu: Record<string, number>, requests: number) =>
  Object.fromEntries(Object.entries(cpu).map(([name, us]) => [name, us / Math.max(1, requests)]));

/** Lua long-bracket string: wrk's scripts carry the body verbatim. */
const luaString = (s: string) => `[==[${s}]==]`;

/**
 * wrk, one thread, `connections` keep-alive connections. A Lua script sets method, headers and
 * body and prints the summary as JSON; wrk counts non-2xx/3xx responses, so a run expecting 2xx
 * must see none, and one expecting an error status must see nothing else.
 */
export async function wrk(target: HttpTarget, opts: LoadOptions): Promise<Run> {
  const script = path.join(opts.dir, "wrk.lua");
  writeFileSync(
    script,
    [
      `wrk.method = "${target.method ?? "GET"}"`,
      ...Object.entries(target.headers ?? {}).map(([k, v]) => `wrk.headers[ ${luaString(k)} ] = ${luaString(v)}`),
      target.body !== undefined ? `wrk.body = ${luaString(target.body)}` : "",
      `done = function(s, latency)`,
      `  local e = s.errors`,
      `  io.write(string.format('{"requests":%d,"us":%d,"errors":%d,"non2xx":%d,"p50":%d,"p99":%d}\\n',`,
      `    s.requests, s.duration, e.connect + e.read + e.write + e.timeout, e.status,`,
      `    latency:percentile(50), latency:percentile(99)))`,
      `end`,
    ].join("\n"),
  );
  const meter = cpuMeter(opts.pids);
  const { stdout, cpuUs } = await runTool(
    "wrk",
    ["-t1", `-c${opts.connections}`, `-d${opts.durationSeconds}s`, "--timeout", "10s", "-s", script, target.url],
    (opts.durationSeconds + 60) * 1000,
  );
  const cpu = meter.stop();
  const line = stdout.split("\n").find((l) => l.startsWith('{"requests"'));
  if (!line) throw new Error(`wrk printed no summary:\n${stdout}`);
  const s = JSON.parse(line) as { requests: number; us: number; errors: number; non2xx: number; p50: number; p99: number };
  const wrong = target.status < 400 ? s.non2xx : s.requests - s.non2xx;
  return {
    rps: s.requests / (s.us / 1e6),
    p50: s.p50 / 1000,
    p99: s.p99 / 1000,
    requests: s.requests,
    failures: wrong + s.errors,
    cpuPerRequest: perRequest({ ...cpu, load: cpuUs }, s.requests),
  };
}

export interface GrpcTarget {
  /** http://host:port/package.Service/Method */
  url: string;
  /** The request, already framed for gRPC (see grpc-frame.ts). */
  frame: Buffer;
}

/**
 * h2load over one HTTP/2 connection with `connections` concurrent streams (as the gateway's one
 * channel carries them), POSTing a pre-encoded request. h2load sees HTTP statuses only; the caller
 * checks beforehand that the same bytes get a gRPC OK.
 */
export async function h2load(target: GrpcTarget, opts: LoadOptions): Promise<Run> {
  const data = path.join(opts.dir, "h2load-request.bin");
  const logFile = path.join(opts.dir, "h2load.tsv");
  writeFileSync(data, target.frame);
  writeFileSync(logFile, "");
  const meter = cpuMeter(opts.pids);
  const { stdout, cpuUs } = await runTool(
    "h2load",
    [
      "-t1", "-c1", `-m${opts.connections}`, `-D${opts.durationSeconds}`, "-d", data, `--log-file=${logFile}`,
      "-H", "content-type: application/grpc", "-H", "te: trailers", target.url,
    ],
    (opts.durationSeconds + 60) * 1000,
  );
  const cpu = meter.stop();
  const done = /requests: \d+ total, \d+ started, (\d+) done, (\d+) succeeded/.exec(stdout);
  const finished = /finished in ([\d.]+)s, ([\d.]+) req\/s/.exec(stdout);
  if (!done || !finished) throw new Error(`h2load printed no summary:\n${stdout}`);
  const latencies = readFileSync(logFile, "utf8")
    .split("\n")
    .flatMap((l) => (l ? [Number(l.split("\t")[2]) / 1000] : []))
    .sort((a, b) => a - b);
  const requests = Number(done[1]);
  return {
    rps: Number(finished[2]),
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    requests,
    failures: requests - Number(done[2]),
    cpuPerRequest: perRequest({ ...cpu, load: cpuUs }, requests),
  };
}

/**
 * Open-loop load at a constant offered rate (for latency at a given load): a request is due every
 * 1/rate s whatever happened to the earlier ones, over at most `connections` keep-alive connections
 * (requests wait for a free one), and each latency runs from the moment the request was due, so
 * a slow response is not hidden by the requests it held back (no coordinated omission). The load
 * generator is this process.
 */
export async function openLoop(target: HttpTarget, rate: number, opts: LoadOptions): Promise<Run> {
  const url = new URL(target.url);
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.connections });
  const options: http.RequestOptions = {
    agent,
    host: url.hostname,
    port: url.port,
    path: url.pathname + url.search,
    method: target.method ?? "GET",
    headers: { ...target.headers, ...(target.body !== undefined && { "content-length": String(Buffer.byteLength(target.body)) }) },
  };
  const send = (onDone: (status: number | undefined) => void) => {
    const req = http.request(options, (res) => {
      res.on("data", () => {});
      res.on("end", () => onDone(res.statusCode));
    });
    req.on("error", () => onDone(undefined));
    req.end(target.body);
  };
  // Open the connections first, so connecting is not measured.
  await Promise.all(Array.from({ length: opts.connections }, () => new Promise((resolve) => send(resolve))));

  const latencies: number[] = [];
  let failures = 0;
  const total = Math.max(1, Math.round(rate * opts.durationSeconds));
  const intervalMs = 1000 / rate;
  const meter = cpuMeter(opts.pids);
  const ownCpu = process.cpuUsage();
  const start = performance.now();
  let sent = 0;
  let completed = 0;
  await new Promise<void>((resolve) => {
    const fire = (due: number) =>
      send((status) => {
        latencies.push(performance.now() - due);
        if (status !== target.status) failures++;
        if (++completed === total) resolve();
      });
    const tick = () => {
      const now = performance.now();
      for (let due = start + sent * intervalMs; sent < total && due <= now; due = start + sent * intervalMs) {
        fire(due);
        sent++;
      }
      if (sent < total) setTimeout(tick, Math.max(0, start + sent * intervalMs - performance.now()));
    };
    tick();
  });
  const elapsedSeconds = (performance.now() - start) / 1000;
  const cpu = { ...meter.stop(), load: cpuSince(ownCpu) };
  agent.destroy();
  latencies.sort((x, y) => x - y);
  return {
    rps: completed / elapsedSeconds,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    requests: completed,
    failures,
    cpuPerRequest: perRequest(cpu, completed),
  };
}
