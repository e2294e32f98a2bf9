/**
 * One SQLite driver doing what the pet store does, in a process of its own (one SQLite library per
 * process), for bench/sqlite-drivers.ts: `node bench/sqlite-driver-run.ts DRIVER FILE OP COUNT`.
 * DRIVER is node:sqlite or better-sqlite3 (loaded from BETTER_SQLITE3_DIR, installed on demand).
 * OPs, on a WAL file with synchronous=FULL and INTEGER columns read as bigint, as the store opens it:
 *   list     the store's ListPets(20) statement, run to completion COUNT times
 *   create   a lone create, as a group commit of one: BEGIN IMMEDIATE, SAVEPOINT, INSERT … RETURNING,
 *            RELEASE, COMMIT (one fsync), COUNT times
 *   create32 the same with 32 creates per COMMIT (a busy moment's batch), COUNT creates
 * Prints {"cpuUs": per operation, "wallUs": per operation} on stdout.
 */
import { createRequire } from "node:module";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { SQLITE_STATEMENTS } from "../pet-service/store/sqlite/store.ts";
import { INSERT_PET } from "../pet-service/store/sqlite/commit-batch.ts";
import { SQLITE_MIGRATIONS } from "../pet-service/store/sqlite/migrations.ts";

interface Statement {
  all(...params: unknown[]): unknown[];
  get(...params: unknown[]): unknown;
  run(...params: unknown[]): unknown;
}
interface Db {
  exec(sql: string): void;
  prepare(sql: string): Statement;
}

const [driver, file, op, countArg] = process.argv.slice(2);
const count = Number(countArg);

function open(): Db {
  if (driver === "node:sqlite") return new DatabaseSync(file!, { readBigInts: true, timeout: 5_000 }) as unknown as Db;
  if (driver === "better-sqlite3") {
    const require = createRequire(path.join(process.env.BETTER_SQLITE3_DIR!, "node_modules", "x.js"));
    const Database = require("better-sqlite3") as new (file: string, options: object) => Db & { defaultSafeIntegers(on: boolean): void };
    const db = new Database(file!, { timeout: 5_000 });
    db.defaultSafeIntegers(true);
    return db;
  }
  throw new Error(`unknown driver ${driver}`);
}

const db = open();
db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;");
db.exec(SQLITE_MIGRATIONS[0]!.sql);
const [begin, savepoint, insert, release, commit] = ["BEGIN IMMEDIATE", "SAVEPOINT pet_write", INSERT_PET, "RELEASE pet_write", "COMMIT"].map((sql) => db.prepare(sql));
const list = db.prepare(SQLITE_STATEMENTS.list);

function creates(perCommit: number, total: number): void {
  for (let done = 0; done < total; done += perCommit) {
    begin!.run();
    for (let i = 0; i < perCommit; i++) {
      savepoint!.run();
      insert!.get("Bench pet", 7n, "pending");
      release!.run();
    }
    commit!.run();
  }
}

const operations: Record<string, () => void> = {
  list: () => {
    for (let i = 0; i < count; i++) list.all(0n, 20);
  },
  create: () => creates(1, count),
  create32: () => creates(32, count),
};
const run = operations[op!];
if (!run) throw new Error(`unknown operation ${op}`);
// The 20 pets ListPets reads, and a warm-up of the operation itself (its code optimised, its pages cached).
creates(20, 20);
const warm = Math.max(1, Math.round(count / 10));
if (op === "list") for (let i = 0; i < warm; i++) list.all(0n, 20);
const cpu = process.cpuUsage();
const started = performance.now();
run();
const wallUs = ((performance.now() - started) * 1000) / count;
const { user, system } = process.cpuUsage(cpu);
process.stdout.write(`${JSON.stringify({ cpuUs: (user + system) / count, wallUs })}\n`);
