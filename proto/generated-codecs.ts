import type * as protoLoader from "@grpc/proto-loader";
import { petstore_v1_PetService as PET_SERVICE_CODECS } from "./generated/petstore-v1.ts";
import { PET_SERVICE_NAME } from "./load.ts";

// Apart from load.ts, which scripts/generate-codecs.ts imports: the generator must run when the
// file it writes is missing or stale.

/**
 * The definition with PetService's (de)serializers replaced by the codecs generated from the same
 * proto (proto/generated/petstore-v1.ts): the same bytes and the same objects as proto-loader's, without
 * protobufjs's message objects and Long values in between. The gateway's client and the pet
 * service's server use it; everything else about the definition (reflection, types) is unchanged.
 */
export function withGeneratedCodecs(definition: protoLoader.PackageDefinition): protoLoader.PackageDefinition {
  const service = definition[PET_SERVICE_NAME] as protoLoader.ServiceDefinition;
  const methods = Object.fromEntries(
    Object.entries(service).map(([name, method]) => {
      const codec = (PET_SERVICE_CODECS as Readonly<Record<string, (typeof PET_SERVICE_CODECS)[keyof typeof PET_SERVICE_CODECS]>>)[name];
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
