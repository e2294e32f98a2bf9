/**
 * A floor of the benchmark: a grpc-js server that answers PetService/ListPets with fixed bytes
 * (FIXED_RESPONSE_FILE: a real ListPets reply) and pass-through (de)serializers, so a call costs
 * grpc-js and HTTP/2 only: no protobuf, storage, logs or metrics.
 *
 *   FIXED_PORT=50052 FIXED_RESPONSE_FILE=/tmp/reply.bin node bench/grpc-fixed-server.ts
 */
import { readFileSync } from "node:fs";
import * as grpc from "@grpc/grpc-js";
import { methodPath } from "./grpc-frame.ts";

const reply = readFileSync(process.env.FIXED_RESPONSE_FILE ?? "");
const same = (bytes: Buffer) => bytes;
const service: grpc.ServiceDefinition = {
  ListPets: {
    path: methodPath("ListPets"),
    requestStream: false,
    responseStream: false,
    requestSerialize: same,
    requestDeserialize: same,
    responseSerialize: same,
    responseDeserialize: same,
  },
};
const server = new grpc.Server({ "grpc.enable_channelz": 0 });
server.addService(service, { ListPets: (_call: unknown, callback: grpc.sendUnaryData<Buffer>) => callback(null, reply) });
server.bindAsync(`127.0.0.1:${process.env.FIXED_PORT ?? 0}`, grpc.ServerCredentials.createInsecure(), (err, port) => {
  if (err) throw err;
  console.log(JSON.stringify({ msg: "grpc-fixed-server listening", port }));
});
const stop = () => server.tryShutdown(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
