import { fileURLToPath } from "node:url";
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";

/** Root of the .proto tree; import paths are relative to it (buf style). */
export const PROTO_ROOT = path.dirname(fileURLToPath(import.meta.url));
export const PET_SERVICE_PROTO = "petstore/v1/pet_service.proto";
export const PET_SERVICE_NAME = "petstore.v1.PetService";

/**
 * int64 as decimal strings (exact over the whole range), enums as their names, defaults filled,
 * field names in lowerCamelCase (the JSON mapping), so both sides share one object shape.
 */
export const LOADER_OPTIONS: protoLoader.Options = {
  keepCase: false,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [PROTO_ROOT],
};

export function loadPetServiceDefinition(): protoLoader.PackageDefinition {
  return protoLoader.loadSync(PET_SERVICE_PROTO, LOADER_OPTIONS);
}

export interface PetStoreV1 {
  PetService: grpc.ServiceClientConstructor;
}

export function loadPetStorePackage(definition = loadPetServiceDefinition()): PetStoreV1 {
  const root = grpc.loadPackageDefinition(definition) as unknown as { petstore: { v1: PetStoreV1 } };
  return root.petstore.v1;
}
