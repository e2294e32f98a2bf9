import * as grpc from "@grpc/grpc-js";
import { service as healthService } from "grpc-health-check";
import { errorInfoOf, PETSTORE_ERROR_DOMAIN, STORAGE_UNAVAILABLE } from "../../lib/grpc-status-details.ts";
import { PET_SERVICE_NAME } from "../../proto/load.ts";
import { isGrpcError, type PetClient } from "../pet-client/pet-client.ts";

/** A readiness probe part: resolves to the reason it is not ready, or undefined when it is. */
export type ReadinessCheck = () => Promise<string | undefined>;

/** Runs every check concurrently; the reasons of those that fail, empty when ready. */
export async function notReadyReasons(checks: readonly ReadinessCheck[]): Promise<string[]> {
  const results = await Promise.all(checks.map((check) => check().catch((err: Error) => err.message)));
  return results.filter((r): r is string => typeof r === "string");
}

const HealthClient = grpc.makeClientConstructor(healthService, "grpc.health.v1.Health");


/**
 * Why the pet service cannot serve, in its own words: one cheap call (ListPets of one pet) whose
 * UNAVAILABLE answer names the storage fault, e.g. "database unreachable". Undefined when the
 * call succeeds or fails otherwise.
 */
export async function storageFaultOf(pets: Pick<PetClient, "listPets">): Promise<string | undefined> {
  try {
    await pets.listPets({ limit: 1 }, { requestId: "readyz" });
    return undefined;
  } catch (err) {
    const info = isGrpcError(err) ? errorInfoOf(err) : undefined;
    const fault = info?.domain === PETSTORE_ERROR_DOMAIN && info.reason === STORAGE_UNAVAILABLE ? info.metadata?.fault : undefined;
    return fault && `database ${fault.replace("_", " ")}`;
  }
}

export interface PetServiceHealthOptions {
  timeoutMs?: number;
  /** Asked when the pet service is not SERVING: why (see storageFaultOf). */
  explain?: () => Promise<string | undefined>;
  /** The channel's options (the same target syntax and balancing as the PetService client). */
  channelOptions?: grpc.ChannelOptions;
  /** The PetService client's credentials (TLS to the pet service when configured); plaintext by default. */
  credentials?: grpc.ChannelCredentials;
}

/**
 * grpc.health.v1 Check of the pet service, with its own short deadline: the readiness check (with
 * the reason when not SERVING) and `serving()`, the bare answer (the metrics gauge asks it at every
 * scrape and needs no reason: `explain` costs the pet service a call).
 */
export function petServiceHealth(
  address: string,
  opts: PetServiceHealthOptions = {},
): ReadinessCheck & { serving(): Promise<boolean>; close(): void } {
  const { timeoutMs = 500, explain, channelOptions, credentials = grpc.credentials.createInsecure() } = opts;
  const client = new HealthClient(address, credentials, channelOptions) as unknown as grpc.Client & {
    check(req: { service: string }, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res: { status: string }) => void): void;
  };
  const request = { service: PET_SERVICE_NAME };
  /** The status the pet service reports, or the gRPC code that kept it from answering. */
  const ask = () =>
    new Promise<{ status: string } | { unreachable: string }>((resolve) => {
      client.check(request, { deadline: Date.now() + timeoutMs }, (err, res) =>
        resolve(err ? { unreachable: grpc.status[err.code] } : { status: res.status }),
      );
    });
  const check = async () => {
    const health = await ask();
    if ("unreachable" in health) return `pet service unreachable (${health.unreachable})`;
    if (health.status === "SERVING") return undefined;
    const why = explain && (await explain());
    return `pet service ${health.status}${why ? `: ${why}` : ""}`;
  };
  const serving = async () => {
    const health = await ask();
    return "status" in health && health.status === "SERVING";
  };
  return Object.assign(check, { serving, close: () => client.close() });
}
