/**
 * `npm run bench:paging`: does a page cost the same however deep it is? A 100,000-pet SQLite
 * file, the pet service on it (createServer, real gRPC on loopback), and ListPets(limit=100) for
 * the first page and the 1,000th (the last), in alternating rounds. Prints a table: latency per
 * call, CPU-µs per call of this process (client and server share it; the client's share is the
 * same for both pages), and the store's own query time. For contrast, the OFFSET query that
 * keyset paging avoids, on the same file.
 *
 *   node bench/paging-depth.ts [--pets 100000] [--rounds 7] [--calls 500]
 */
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import * as grpc from "@grpc/grpc-js";
import { createLogger } from "../lib/logger.ts";
import { loadPetStorePackage } from "../proto/load.ts";
import type { ListPetsRequestInit, ListPetsResponse } from "../proto/generated/petstore-v1.ts";
import { createServer } from "../pet-service/server.ts";
import { openSqlite } from "../lib/sqlite.ts";
import { SqlitePetStore } from "../pet-service/store/sqlite/store.ts";
import { cpuSince, fmt, median, timePerCall, today } from "../testkit/stats.ts";

const { values } = parseArgs({
  options: { pets: { type: "string", default: "100000" }, rounds: { type: "string", default: "7" }, calls: { type: "string", default: "500" } },
});
const PETS = Number(values.pets);
const ROUNDS = Number(values.rounds);
const CALLS = Number(values.calls);
const LIMIT = 100;
const log = (message: string) => process.stderr.write(`[paging] ${message}\n`);

const dir = await mkdtemp(path.join(os.tmpdir(), "paging-depth-"));
const dbPath = path.join(dir, "pets.sqlite");
try {
  await fill(dbPath, PETS);
  const store = await SqlitePetStore.open(dbPath);
  const server = createServer({ store, logger: createLogger("pet-service", "silent") });
  const port = await server.listen("127.0.0.1", 0);
  const { PetService } = loadPetStorePackage();
  const client = new PetService(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const listPets = (request: ListPetsRequestInit) =>
    new Promise<ListPetsResponse>((resolve, reject) =>
      client.ListPets!(request, { deadline: Date.now() + 10_000 }, (err: grpc.ServiceError | null, res: ListPetsResponse) =>
        err ? reject(err) : resolve(res),
      ),
    );

  // Walk every page once, as a client would, keeping the token of the page to measure.
  log(`walking all ${PETS / LIMIT} pages to reach page ${PETS / LIMIT}`);
  const deepPage = PETS / LIMIT;
  let token = "";
  for (let page = 1; page < deepPage; page++) token = (await listPets({ limit: LIMIT, pageToken: token })).nextPageToken;
  const pages = [
    { name: "page 1", request: { limit: LIMIT }, afterId: 0n },
    { name: `page ${deepPage}`, request: { limit: LIMIT, pageToken: token }, afterId: BigInt(PETS - LIMIT) },
  ];
  const last = await listPets(pages[1]!.request);
  if (last.pets.length !== LIMIT || last.nextPageToken !== "" || last.pets[0]!.id !== String(PETS - LIMIT + 1)) {
    throw new Error(`page ${deepPage} is not the last ${LIMIT} pets`);
  }

  const side = openSqlite(dbPath);
  const results = new Map<string, { grpcUs: number[]; cpuUs: number[]; storeUs: number[]; offsetUs: number[] }>();
  for (let round = 1; round <= ROUNDS; round++) {
    // Alternate which page goes first, so drift on this shared machine hits both alike.
    for (const page of round % 2 ? pages : [...pages].reverse()) {
      const r = results.get(page.name) ?? { grpcUs: [], cpuUs: [], storeUs: [], offsetUs: [] };
      results.set(page.name, r);
      const cpu = process.cpuUsage();
      r.grpcUs.push(await timePerCall(() => listPets(page.request), CALLS));
      r.cpuUs.push(cpuSince(cpu) / CALLS);
      r.storeUs.push(await timePerCall(() => store.list({ limit: LIMIT + 1, afterId: page.afterId })));
      const offset = Number(page.afterId);
      r.offsetUs.push(await timePerCall(async () => side.prepare(`SELECT id, name, category_id, status FROM pets ORDER BY id LIMIT ${LIMIT + 1} OFFSET ${offset}`).all()));
    }
    log(`round ${round}/${ROUNDS} done`);
  }
  side.close();
  client.close();
  await server.shutdown();
  await store.close();

  const rows = [...results].map(
    ([name, r]) => `| ${name} | ${fmt(median(r.grpcUs))} | ${fmt(median(r.cpuUs))} | ${fmt(median(r.storeUs))} | ${fmt(median(r.offsetUs))} |`,
  );
  process.stdout.write(
    [
      `ListPets(limit=${LIMIT}) on ${PETS.toLocaleString("en-US")} pets (SQLite), ${ROUNDS} alternating rounds × ${CALLS} sequential calls; medians. ${today()}, ${os.cpus()[0]?.model ?? "?"}, ${os.cpus().length} cores, Node ${process.version}.`,
      "",
      "| page | gRPC latency µs/call | CPU-µs/call (client + server) | store.list µs/call (keyset) | OFFSET query µs/call (for contrast) |",
      "|---|---:|---:|---:|---:|",
      ...rows,
      "",
    ].join("\n"),
  );
} finally {
  await rm(dir, { recursive: true, force: true });
}

/** Creates the schema through the store, then `count` pets (statuses in turn) in one transaction. */
async function fill(file: string, count: number): Promise<void> {
  await (await SqlitePetStore.open(file)).close();
  const db = openSqlite(file);
  log(`inserting ${count} pets`);
  db.exec(
    `BEGIN;
     WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${count})
     INSERT INTO pets (name, category_id, status)
       SELECT 'pet ' || i, 1 + i % 50, CASE i % 3 WHEN 0 THEN 'available' WHEN 1 THEN 'pending' ELSE 'sold' END FROM n;
     COMMIT;`,
  );
  db.close();
}

