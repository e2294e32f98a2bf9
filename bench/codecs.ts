/**
 * `npm run bench:codecs`: CPU per (de)serialisation of the PetService messages on the hot path,
 * the generated codecs against proto-loader's, in alternating rounds in this process.
 *
 *   node bench/codecs.ts [--rounds 7] [--ops 20000]
 */
import { parseArgs } from "node:util";
import type * as protoLoader from "@grpc/proto-loader";
import { withGeneratedCodecs } from "../proto/generated-codecs.ts";
import { loadPetServiceDefinition, PET_SERVICE_NAME } from "../proto/load.ts";
import { cpuSince, fmt, median, today } from "../testkit/stats.ts";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "7" }, ops: { type: "string", default: "20000" } } });
const ROUNDS = Number(values.rounds);
const OPS = Number(values.ops);

const definition = loadPetServiceDefinition();
const codecs = {
  "proto-loader": definition[PET_SERVICE_NAME] as protoLoader.ServiceDefinition,
  generated: withGeneratedCodecs(definition)[PET_SERVICE_NAME] as protoLoader.ServiceDefinition,
};
const pets = Array.from({ length: 20 }, (_, i) => ({
  id: String(i + 1),
  name: `Seed pet ${i + 1}`,
  categoryId: String(1 + (i % 4)),
  status: ["PET_STATUS_AVAILABLE", "PET_STATUS_PENDING", "PET_STATUS_SOLD"][i % 3]!,
}));
const listReply = { pets, nextPageToken: "AQMAAAAAAAAAKtCF0l7b5XmGQzGI0m0m4Vc" };
const listBytes = codecs["proto-loader"].ListPets!.responseSerialize(listReply);
const createRequest = { name: "Bench pet", categoryId: "7", status: "PET_STATUS_PENDING", requestId: "key_abc:8e03978e" };

/** Each operation as the side that runs it: gateway encodes requests and decodes replies, the pet service the reverse. */
const operations: Record<string, (m: protoLoader.ServiceDefinition) => () => unknown> = {
  "gateway: encode ListPetsRequestInit": (m) => () => m.ListPets!.requestSerialize({ limit: 20 }),
  "pet service: decode ListPetsRequestInit": (m) => {
    const bytes = m.ListPets!.requestSerialize({ limit: 20 });
    return () => m.ListPets!.requestDeserialize(bytes);
  },
  "pet service: encode ListPetsResponse (20 pets)": (m) => () => m.ListPets!.responseSerialize(listReply),
  "gateway: decode ListPetsResponse (20 pets)": (m) => () => m.ListPets!.responseDeserialize(listBytes),
  "gateway: encode CreatePetRequestInit": (m) => () => m.CreatePet!.requestSerialize(createRequest),
};

const results = new Map<string, number[]>();
for (let round = 0; round < ROUNDS; round++) {
  for (const [op, make] of Object.entries(operations)) {
    for (const [name, methods] of round % 2 ? Object.entries(codecs).reverse() : Object.entries(codecs)) {
      const run = make(methods);
      for (let i = 0; i < 1000; i++) run(); // warm
      const cpu = process.cpuUsage();
      for (let i = 0; i < OPS; i++) run();
      const key = `${op}|${name}`;
      results.set(key, [...(results.get(key) ?? []), cpuSince(cpu) / OPS]);
    }
  }
}
const lines = [
  `PetService (de)serialisation, CPU-µs per operation (medians of ${ROUNDS} alternating rounds × ${fmt(OPS)}). ${today()}, Node ${process.version}.`,
  "",
  "| operation | proto-loader | generated | saved |",
  "|---|---:|---:|---:|",
  ...Object.keys(operations).map((op) => {
    const a = median(results.get(`${op}|proto-loader`)!);
    const b = median(results.get(`${op}|generated`)!);
    return `| ${op} | ${fmt(a, 2)} | ${fmt(b, 2)} | ${fmt(a - b, 2)} |`;
  }),
];
process.stdout.write(`${lines.join("\n")}\n`);
