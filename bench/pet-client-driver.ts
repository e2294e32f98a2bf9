/**
 * The gRPC-client candidates of `npm run bench`, one process each run: makes ListPets(limit=20)
 * calls with DRIVER_IN_FLIGHT calls in flight for DRIVER_SECONDS through one client and prints
 * {"calls", "cpuUs", "p50", "p99", "failures"} (its own CPU, process.cpuUsage(), over the measured
 * part only: after a warm-up of DRIVER_WARMUP_CALLS calls, 2,000 by default).
 *
 *   DRIVER_CLIENT   grpc-js        the gateway's client before this issue: proto-loader's service
 *                                  client with the generated codecs, `client.ListPets(request,
 *                                  metadata, {deadline}, callback)`, today's channel options
 *                   grpc-js-tuned  grpc-js through makeUnaryRequest with the generated codecs
 *                                  (gateway/pet-client/grpc-js-transport.ts), plus the channel
 *                                  options of GRPC_JS_TUNED below
 *                   http2          the thin unary client on node:http2 sessions (http2-transport.ts)
 *   DRIVER_TARGET   host:port of a PetService (the real one, or bench/grpc-fixed-server.ts)
 *   DRIVER_GRPC_OPTIONS  JSON channel options added to grpc-js-tuned's, to try more
 *
 * Every candidate sends the same request with the same metadata (x-request-id) and a 2 s deadline,
 * and decodes the reply into the same objects.
 */
import * as grpc from "@grpc/grpc-js";
import { loadPetServiceDefinition, loadPetStorePackage } from "../proto/load.ts";
import { withGeneratedCodecs } from "../proto/generated-codecs.ts";
import { createGrpcJsTransport, grpcJsChannelOptions } from "../gateway/pet-client/grpc-js-transport.ts";
import { createHttp2Transport } from "../gateway/pet-client/http2-transport.ts";
import { PET_METHODS, PET_SERVICE_CONNECTION, type PetTransport } from "../gateway/pet-client/transport.ts";
import { percentile } from "../testkit/stats.ts";

const address = process.env.DRIVER_TARGET ?? "127.0.0.1:50051";
const seconds = Number(process.env.DRIVER_SECONDS ?? 5);
const inFlight = Number(process.env.DRIVER_IN_FLIGHT ?? 32);
const kind = process.env.DRIVER_CLIENT ?? "http2";
const warmupCalls = Number(process.env.DRIVER_WARMUP_CALLS ?? 2_000);

/** Tuning tried on grpc-js beyond makeUnaryRequest; each kept only where it measurably paid (docs/performance.md). */
const GRPC_JS_TUNED: grpc.ChannelOptions = {};

function todaysClient(): PetTransport {
  const { PetService } = loadPetStorePackage(withGeneratedCodecs(loadPetServiceDefinition()));
  const client = new PetService(address, grpc.credentials.createInsecure(), grpcJsChannelOptions(PET_SERVICE_CONNECTION));
  const listPets = client.ListPets!.bind(client) as (r: unknown, m: grpc.Metadata, o: grpc.CallOptions, cb: (e: Error | null, r: unknown) => void) => void;
  return {
    unary: (_method, request, metadata, deadline) =>
      new Promise((resolve, reject) => {
        const md = new grpc.Metadata();
        md.set("x-request-id", metadata["x-request-id"]!);
        listPets(request, md, { deadline }, (err, reply) => (err ? reject(err) : resolve(reply)));
      }),
    close: () => client.close(),
  };
}

function candidate(): PetTransport {
  const options = { address, connection: PET_SERVICE_CONNECTION };
  switch (kind) {
    case "grpc-js":
      return todaysClient();
    case "grpc-js-tuned":
      return createGrpcJsTransport(options, { ...GRPC_JS_TUNED, ...(JSON.parse(process.env.DRIVER_GRPC_OPTIONS ?? "{}") as grpc.ChannelOptions) });
    case "http2":
      return createHttp2Transport(options);
    default:
      throw new Error(`DRIVER_CLIENT must be grpc-js, grpc-js-tuned or http2 (got ${kind})`);
  }
}

const client = candidate();
const request = { limit: 20 };
let n = 0;
const oneCall = () => client.unary(PET_METHODS.ListPets, request, { "x-request-id": `bench-${n++}` }, Date.now() + 2_000);

// Warm-up: connections made, code optimised.
for (let i = 0; i < warmupCalls / inFlight; i++) await Promise.all(Array.from({ length: inFlight }, oneCall));

process.stderr.write("measuring\n");
const latencies: number[] = [];
let calls = 0;
let failures = 0;
const cpu = process.cpuUsage();
const end = performance.now() + seconds * 1000;
await Promise.all(
  Array.from({ length: inFlight }, async () => {
    while (performance.now() < end) {
      const started = performance.now();
      try {
        await oneCall();
        calls++;
      } catch {
        failures++;
      }
      latencies.push(performance.now() - started);
    }
  }),
);
const used = process.cpuUsage(cpu);
latencies.sort((a, b) => a - b);
console.log(JSON.stringify({ calls, failures, cpuUs: used.user + used.system, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99) }));
client.close();
