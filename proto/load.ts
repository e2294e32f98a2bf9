import { fileURLToPath } from "node:url";
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { petstore_v1_PetService as PET_SERVICE_CODECS } from "./codecs.generated.js";

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

/**
 * The definition with PetService's (de)serializers replaced by the codecs generated from the same
 * proto (proto/codecs.generated.ts): the same bytes and the same objects as proto-loader's, without
 * protobufjs's message objects and Long values in between. The gateway's client and the pet
 * service's server use it; everything else about the definition (reflection, types) is unchanged.
 */
export function withGeneratedCodecs(definition: protoLoader.PackageDefinition): protoLoader.PackageDefinition {
  const service = definition[PET_SERVICE_NAME] as protoLoader.ServiceDefinition;
  const methods = Object.fromEntries(
    Object.entries(service).map(([name, method]) => {
      const codec = PET_SERVICE_CODECS[name];
      if (!codec) throw new Error(`no generated codec for ${PET_SERVICE_NAME}/${name}: run npm run generate:codecs`);
      return [
        name,
        {
          ...method,
          requestSerialize: codec.request.encode,
          requestDeserialize: codec.request.decode,
          responseSerialize: codec.response.encode,
          responseDeserialize: codec.response.decode,
        },
      ];
    }),
  );
  return { ...definition, [PET_SERVICE_NAME]: methods as protoLoader.ServiceDefinition };
}

export interface PetStoreV1 {
  PetService: grpc.ServiceClientConstructor;
}

export function loadPetStorePackage(definition = loadPetServiceDefinition()): PetStoreV1 {
  const root = grpc.loadPackageDefinition(definition) as unknown as { petstore: { v1: PetStoreV1 } };
  return root.petstore.v1;
}
