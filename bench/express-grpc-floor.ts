/**
 * Floors of the benchmark: Express in front of the pet service with nothing of the gateway's own
 * work (no auth, quotas, headers, logs or metrics), to show what the transport alone costs.
 *
 *   FLOOR_MODE=naive         GET /v1/pets: a grpc-js client from proto-loader calls ListPets(limit
 *                            from the query) and the pets are written as the gateway writes them;
 *   FLOOR_MODE=pass-through  GET /v1/pets: one ListPets call with fixed request bytes and pass-through
 *                            (de)serializers (no protobuf work at all), then the bytes in
 *                            FLOOR_BODY_FILE: the cost of Express + grpc-js alone.
 *
 *   FLOOR_MODE=naive FLOOR_PORT=8091 PET_SERVICE_ADDR=127.0.0.1:50051 node bench/express-grpc-floor.ts
 */
import { readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import * as grpc from "@grpc/grpc-js";
import express from "express";
import { petsJson } from "../gateway/http/pet-mapping.ts";
import { loadPetStorePackage } from "../proto/load.ts";
import type { ListPetsResponse } from "../proto/generated/petstore-v1.ts";
import { encodeRequest, methodPath } from "./grpc-frame.ts";

const mode = process.env.FLOOR_MODE;
const address = process.env.PET_SERVICE_ADDR ?? "127.0.0.1:50051";
const OPTIONS: grpc.ChannelOptions = { "grpc.enable_channelz": 0 };
const deadline = () => ({ deadline: Date.now() + 2_000 });

const app = express();
app.disable("x-powered-by");
app.set("etag", false);

if (mode === "naive") {
  const { PetService } = loadPetStorePackage();
  const client = new PetService(address, grpc.credentials.createInsecure(), OPTIONS);
  app.get("/v1/pets", (req, res) => {
    client.ListPets!({ limit: Number(req.query.limit ?? 20) }, deadline(), (err: grpc.ServiceError | null, reply: ListPetsResponse) => {
      if (err) res.status(502).json({ code: "bad_gateway", message: err.details, status: 502 });
      else res.type("application/json").send(petsJson(reply.pets));
    });
  });
} else if (mode === "pass-through") {
  const body = readFileSync(process.env.FLOOR_BODY_FILE ?? "", "utf8");
  const client = new grpc.Client(address, grpc.credentials.createInsecure(), OPTIONS);
  const request = encodeRequest("ListPets", { limit: 20 });
  const same = (bytes: Buffer) => bytes;
  app.get("/v1/pets", (_req, res) => {
    client.makeUnaryRequest(methodPath("ListPets"), same, same, request, new grpc.Metadata(), deadline(), (err) => {
      if (err) res.status(502).json({ code: "bad_gateway", message: err.details, status: 502 });
      else res.type("application/json").send(body);
    });
  });
} else {
  console.error(`express-grpc-floor: FLOOR_MODE must be naive or pass-through (got ${JSON.stringify(mode)})`);
  process.exit(2);
}

const server = app.listen(Number(process.env.FLOOR_PORT ?? 0), "127.0.0.1", () => {
  console.log(JSON.stringify({ msg: "express-grpc-floor listening", mode, port: (server.address() as AddressInfo).port }));
});
const stop = () => server.close(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
