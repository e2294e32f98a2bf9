/**
 * `node bench/tracing-overhead.ts`: what the tracing code adds to one request through both
 * processes, measured without the network, the database or other processes' noise: the calls
 * the gateway and the pet service make per request (extract, SERVER span, request context, the
 * limiter's and the gRPC call's spans, traceparent injected and extracted again, the pet
 * service's SERVER span, a query span, log-line ids, latency observations with exemplars), in
 * four configurations, each in a process of its own (tracing is process-wide), alternating over
 * rounds; CPU-µs per request from process.cpuUsage(), medians.
 *
 *   off      none of it: the latency observations alone (what a request cost before tracing)
 *   unset    no OTLP endpoint (the default): a client's trace continued; these requests bring
 *            none, so they get no ids (lib/tracing/start.ts)
 *   ratio1   an endpoint (a sink in the parent process), parentbased_traceidratio 0.01
 *   ratio100 an endpoint, every request sampled and exported
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { context, propagation, ROOT_CONTEXT, SpanKind, trace } from "@opentelemetry/api";
import { Registry } from "prom-client";
import { endRequestSpan } from "../gateway/http/trace-requests.ts";
import { exemplarHistogram, latencySeries } from "../lib/openmetrics.ts";
import { tracingSettings } from "../lib/tracing/config.ts";
import { startTracing } from "../lib/tracing/start.ts";
import { childSpan, logCorrelation, requestContext, startServerSpan } from "../lib/tracing/spans.ts";
import { endQuerySpan, querySpan } from "../pet-service/store/query-span.ts";
import { startOtlpReceiver } from "../testkit/otlp-receiver.ts";
import { median } from "../testkit/stats.ts";

const MODES = ["off", "unset", "ratio1", "ratio100"] as const;
type Mode = (typeof MODES)[number];
const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 100_000);
// A server has run its request path long past the JIT's tiers; a short warm-up measured the
// compiler's threads too (2,000 requests read about 3 µs more for tracing unset than 50,000).
const WARMUP = 50_000;
const ROUNDS = 9;

async function child(mode: Mode, sink: string): Promise<void> {
  // The default queue and batch, exported every 20 ms (the loop below yields between slices).
  const exporting = { OTEL_EXPORTER_OTLP_ENDPOINT: sink, OTEL_TRACES_SAMPLER: "parentbased_traceidratio", OTEL_BSP_SCHEDULE_DELAY: 20 };
  const env = mode === "off" || mode === "unset" ? {} : { ...exporting, OTEL_TRACES_SAMPLER_ARG: mode === "ratio1" ? 0.01 : 1 };
  const tracing = mode === "off" ? undefined : startTracing("bench", tracingSettings(env as Parameters<typeof tracingSettings>[0]));
  const registers = [new Registry()];
  const histogram = exemplarHistogram({ name: "h", help: "h", labelNames: ["route"], buckets: [0.001, 0.01, 0.1], registers });
  const series = ["http", "client", "server", "query"].map((route) => latencySeries(histogram, { route }));
  const headers: Record<string, string> = { host: "127.0.0.1", authorization: "Bearer x", "user-agent": "wrk" };
  const traced = () => {
    const parent = propagation.extract(ROOT_CONTEXT, headers);
    const span = startServerSpan("GET", parent);
    if (span.isRecording()) span.setAttributes({ "http.request.method": "GET", "url.path": "/v1/pets", "pet_store.request_id": "r" });
    context.with(requestContext(span, "r"), () => {
      childSpan("limiter decision", { "pet_store.plan": "business" })?.end();
      const call = childSpan("petstore.v1.PetService/ListPets", { "rpc.system": "grpc" }, SpanKind.CLIENT);
      const active = call ? trace.setSpan(context.active(), call) : context.active();
      const metadata: Record<string, string> = {};
      propagation.inject(active, metadata);
      // The pet service's side of the call.
      const remote = propagation.extract(ROOT_CONTEXT, metadata);
      const handler = startServerSpan("petstore.v1.PetService/ListPets", remote);
      if (handler.isRecording()) handler.setAttributes({ "rpc.system": "grpc", "rpc.method": "ListPets" });
      context.with(requestContext(handler, "r"), () => {
        const query = querySpan("sqlite", "list_pets");
        series[3]!.observe(0.0005, query);
        endQuerySpan(query, false);
        logCorrelation();
        series[2]!.observe(0.002, handler);
        if (handler.isRecording()) handler.end();
      });
      series[1]!.observe(0.003, trace.getActiveSpan());
      call?.end();
      logCorrelation();
    });
    series[0]!.observe(0.004, span);
    endRequestSpan(span, "GET", "/v1/pets", 200, true);
  };
  const plain = () => {
    for (const [i, s] of series.entries()) s.observe(0.0005 * (i + 1), undefined);
  };
  const request = mode === "off" ? plain : traced;
  // In slices, with the event loop turning between them as a server's does: exports go out as they would.
  const run = async (n: number) => {
    for (let done = 0; done < n; done += 100) {
      for (let i = 0; i < 100; i++) request();
      await new Promise((r) => setImmediate(r));
    }
  };
  await run(WARMUP); // its sampled spans are exported with the rest
  const before = process.cpuUsage();
  await run(REQUESTS);
  // Exporting what was sampled is part of the cost.
  await tracing?.shutdown().catch(() => undefined);
  const used = process.cpuUsage(before);
  process.stdout.write(String((used.user + used.system) / REQUESTS));
}

async function main(): Promise<void> {
  const [, , mode, sink] = process.argv;
  if (mode) return child(mode as Mode, sink!);
  const receiver = await startOtlpReceiver({ decode: false });
  const results = new Map<Mode, number[]>(MODES.map((m) => [m, []]));
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const m of MODES) {
        // Asynchronously: the sink answers the child's exports from this process's event loop.
        const { stdout } = await promisify(execFile)(process.execPath, [import.meta.filename, m, receiver.url], { encoding: "utf8" });
        results.get(m)!.push(Number(stdout));
      }
    }
  } finally {
    await receiver.close();
  }
  const off = median(results.get("off")!);
  process.stdout.write(`CPU-µs per request (both processes' tracing calls together), ${ROUNDS} alternating rounds × ${REQUESTS} requests, medians; Node ${process.version}\n\n`);
  process.stdout.write("| configuration | CPU-µs/request | over off |\n|---|---:|---:|\n");
  for (const m of MODES) {
    const us = median(results.get(m)!);
    process.stdout.write(`| ${m} | ${us.toFixed(2)} | ${m === "off" ? "—" : `+${(us - off).toFixed(2)}`} |\n`);
  }
}

await main();
