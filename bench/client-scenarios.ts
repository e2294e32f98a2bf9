import { execFile } from "node:child_process";
import { cpuMeter } from "../testkit/cpu.ts";
import type { Run } from "./load.ts";
import { baseEnv, ROOT } from "./processes.ts";
import type { Scenario } from "./scenario.ts";
import type { Service } from "./stack.ts";

/**
 * The gRPC-client rows: each candidate of bench/pet-client-driver.ts making ListPets(limit=20)
 * calls, 32 in flight, against the fixed-bytes server (k) and against the real pet service. The
 * driver measures its own CPU (front column: the client); the server's comes from /proc.
 */
export const CLIENT_CANDIDATES = [
  { client: "grpc-js", label: "grpc-js as the gateway used it (service client from proto-loader, generated codecs)" },
  { client: "grpc-js-tuned", label: "grpc-js tuned (makeUnaryRequest with the generated codecs)" },
  { client: "http2", label: "the thin unary client on node:http2 sessions (the gateway's now)" },
] as const;

export const clientScenarioKey = (client: string, server: "fixed" | "pet") => `client-${client}@${server}`;

export function clientScenarios(
  /** Without `pet`, only the rows against the fixed-bytes server (--smoke: each row is a process to start). */
  servers: { fixed?: Service; pet?: Service },
  settings: { inFlight: number; warmupCalls: number },
  wanted: (key: string) => boolean,
): Scenario[] {
  const { inFlight } = settings;
  const rows: Scenario[] = [];
  for (const server of ["fixed", "pet"] as const) {
    const target = servers[server];
    if (!target) continue;
    for (const { client, label } of CLIENT_CANDIDATES) {
      const key = clientScenarioKey(client, server);
      if (!wanted(key)) continue;
      const against = server === "fixed" ? "against the fixed-bytes server (k)" : "against the pet service";
      rows.push({
        key,
        label: `(l) client CPU per unary ListPets(20), ${inFlight} in flight, ${against}: ${label}`,
        pids: { pet: target.proc.pid },
        run: (seconds) => driverRun(client, target, settings, seconds),
      });
    }
  }
  return rows;
}

async function driverRun(client: string, server: Service, settings: { inFlight: number; warmupCalls: number }, seconds: number): Promise<Run> {
  const env = {
    ...baseEnv(),
    NODE_ENV: "production",
    DRIVER_CLIENT: client,
    DRIVER_TARGET: server.address,
    DRIVER_SECONDS: String(seconds),
    DRIVER_IN_FLIGHT: String(settings.inFlight),
    DRIVER_WARMUP_CALLS: String(settings.warmupCalls),
  };
  let meter: { stop(): Record<string, number> } | undefined;
  const stdout = await new Promise<string>((resolve, reject) => {
    const child = execFile(process.execPath, ["bench/pet-client-driver.ts"], { cwd: ROOT, env, timeout: (seconds + 60) * 1000 }, (err, out, errOut) =>
      err ? reject(new Error(`pet-client-driver ${client} failed: ${errOut || err.message}`)) : resolve(out),
    );
    // The server's CPU from the driver's measured part on: the driver prints "measuring" when its warm-up ends.
    child.stderr!.on("data", (chunk: Buffer) => {
      if (!meter && chunk.toString().includes("measuring")) meter = cpuMeter({ pet: server.proc.pid });
    });
  });
  const serverCpu = meter?.stop().pet ?? NaN;
  const r = JSON.parse(stdout.trim().split("\n").pop()!) as { calls: number; failures: number; cpuUs: number; p50: number; p99: number };
  return {
    rps: r.calls / seconds,
    p50: r.p50,
    p99: r.p99,
    requests: r.calls,
    failures: r.failures,
    cpuPerRequest: { front: r.cpuUs / r.calls, pet: serverCpu / r.calls },
  };
}
