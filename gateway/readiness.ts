import * as grpc from "@grpc/grpc-js";
import { service as healthService } from "grpc-health-check";
import { PET_SERVICE_NAME } from "../proto/load.js";

/** A readiness probe part: resolves to the reason it is not ready, or undefined when it is. */
export type ReadinessCheck = () => Promise<string | undefined>;

/** Runs every check concurrently; the reasons of those that fail, empty when ready. */
export async function notReadyReasons(checks: readonly ReadinessCheck[]): Promise<string[]> {
  const results = await Promise.all(checks.map((check) => check().catch((err: Error) => err.message)));
  return results.filter((r): r is string => typeof r === "string");
}

const HealthClient = grpc.makeClientConstructor(healthService, "grpc.health.v1.Health");

/** grpc.health.v1 Check of the pet service, with its own short deadline. */
export function petServiceHealth(address: string, timeoutMs = 500): ReadinessCheck & { close(): void } {
  const client = new HealthClient(address, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
    check(req: { service: string }, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res: { status: string }) => void): void;
  };
  const check = () =>
    new Promise<string | undefined>((resolve) => {
      const request = { service: PET_SERVICE_NAME };
      client.check(request, { deadline: Date.now() + timeoutMs }, (err, res) => {
        if (err) resolve(`pet service unreachable (${grpc.status[err.code]})`);
        else resolve(res.status === "SERVING" ? undefined : `pet service ${res.status}`);
      });
    });
  return Object.assign(check, { close: () => client.close() });
}
