import * as grpc from "@grpc/grpc-js";
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
}

/**
 * grpc.health.v1 Check of the pet service on the PetService client's own connections, with its
 * own short deadline: the readiness check (with the reason when not SERVING) and `serving()`, the
 * bare answer (the metrics gauge asks it at every scrape and needs no reason: `explain` costs the
 * pet service a call). On the same connections, readiness follows exactly what the calls see
 * (a restarted pet service is SERVING as soon as calls reach it again).
 */
export function petServiceHealth(pets: Pick<PetClient, "checkHealth">, opts: PetServiceHealthOptions = {}): ReadinessCheck & { serving(): Promise<boolean> } {
  const { timeoutMs = 500, explain } = opts;
  /** The status the pet service reports, or the gRPC code that kept it from answering. */
  const ask = () =>
    pets.checkHealth(PET_SERVICE_NAME, timeoutMs).then(
      (status) => ({ status }),
      (err: unknown) => ({ unreachable: isGrpcError(err) ? grpc.status[err.code] : String(err) }),
    );
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
  return Object.assign(check, { serving });
}
