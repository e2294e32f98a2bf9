import type * as grpc from "@grpc/grpc-js";
import { loadPetServiceDefinition, PET_SERVICE_NAME } from "../proto/load.ts";

/** PetService requests encoded once, for load tools that send fixed bytes (h2load, the pass-through floor). */

export type PetMethod = "ListPets" | "CreatePet" | "GetPet";

/** The message bytes of `request`, encoded by proto-loader as any gRPC client would. */
export function encodeRequest(method: PetMethod, request: object): Buffer {
  const service = loadPetServiceDefinition()[PET_SERVICE_NAME] as grpc.ServiceDefinition;
  return service[method]!.requestSerialize(request);
}

/** The message in a gRPC length-prefixed frame: not compressed (0), length (uint32 BE), bytes. */
export function grpcFrame(message: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header.writeUInt32BE(message.length, 1);
  return Buffer.concat([header, message]);
}

export const methodPath = (method: PetMethod): string => `/${PET_SERVICE_NAME}/${method}`;
