import * as grpc from "@grpc/grpc-js";

/**
 * A failed call as grpc-js reports it (grpc.ServiceError: `code`, `details`, `metadata`), so the
 * gateway's error mapping and lib/grpc-status-details read every client's errors alike.
 */
export function serviceError(code: grpc.status, details: string, metadata = new grpc.Metadata()): grpc.ServiceError {
  return Object.assign(new Error(`${code} ${grpc.status[code]}: ${details}`), { code, details, metadata });
}

export function isGrpcError(err: unknown): err is grpc.ServiceError {
  return err instanceof Error && typeof (err as grpc.ServiceError).code === "number" && "metadata" in err;
}
