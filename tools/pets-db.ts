/**
 * `npm run pets-db -- copy --from <PETS_DB> --to <PETS_DB> [--replace]`: moves a pet service's
 * data between stores (SQLite ↔ PostgreSQL) with every id kept. Exit codes: 0 done, 1 failed,
 * 2 bad usage; errors are one line on stderr, progress lines too (tables of PROGRESS_MIN_ROWS rows
 * or more), the summary on stdout.
 */
import { access } from "node:fs/promises";
import { parseArgs } from "node:util";
import { failOnOutputError } from "../lib/cli-output.ts";
import { messageOf } from "../lib/error-message.ts";
import { IDEMPOTENCY_TTL_MS } from "../pet-service/idempotency.ts";
import { describePetsDb, openPetStore, openTransferSource, openTransferTarget } from "../pet-service/store/open-store.ts";
import { isPostgresUrl } from "../pet-service/store/pets-db-url.ts";
import { copyStore } from "../pet-service/store/transfer.ts";

const USAGE = `usage: npm run pets-db -- copy --from <PETS_DB> --to <PETS_DB> [--replace]

  copy    copies every pet (ids kept), every live idempotency key and the page-token secret
          from one store to another, and moves the target's ids past the source's.
          PETS_DB is a SQLite file path or a postgres:// URL. Stop the pet services writing
          to --from first. The target is created (SQLite) and migrated when needed; it must be
          empty unless --replace is given, which deletes its pets and keys first.
`;

/** Below this many rows a copy takes a moment: no progress lines. */
const PROGRESS_MIN_ROWS = 5_000;

class UsageError extends Error {}

async function copy(args: string[]): Promise<void> {
  let values: { from?: string; to?: string; replace?: boolean };
  try {
    ({ values } = parseArgs({
      args,
      options: { from: { type: "string" }, to: { type: "string" }, replace: { type: "boolean" } },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    throw new UsageError((err as Error).message.split(". To specify")[0]!);
  }
  const { from, to, replace = false } = values;
  if (!from || !to) throw new UsageError("copy needs --from and --to");
  if (from === to) throw new UsageError("--from and --to name the same database");
  if (!isPostgresUrl(from)) {
    await access(from).catch(() => {
      throw new Error(`--from ${JSON.stringify(from)}: no such SQLite file`);
    });
  }
  // Opening each as the pet service would brings its schema to the current version (a target
  // file or an empty database gets the whole schema; an old SQLite file is baselined).
  for (const petsDb of [from, to]) await (await openPetStore(petsDb)).close();

  const source = await openTransferSource(from);
  const target = await openTransferTarget(to).catch(async (err: unknown) => {
    await source.close();
    throw err;
  });
  let shown = -1;
  const result = await copyStore(source, target, {
    replace,
    liveAfter: Date.now() - IDEMPOTENCY_TTL_MS,
    progress(done, total) {
      const all = total.pets + total.keys;
      if (all < PROGRESS_MIN_ROWS) return;
      const tenth = Math.floor(((done.pets + done.keys) / all) * 10);
      if (tenth === shown) return;
      shown = tenth;
      process.stderr.write(`pets-db copy: ${done.pets}/${total.pets} pets, ${done.keys}/${total.keys} idempotency keys\n`);
    },
  });
  process.stdout.write(
    `copied ${result.pets} pets and ${result.keys} live idempotency keys from ${describePetsDb(from)} to ${describePetsDb(to)}; ` +
      `new ids start after ${result.idsPast}\n`,
  );
}

async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  try {
    if (command === "copy") await copy(args);
    else if (command === undefined || command === "help" || command === "--help") {
      process.stdout.write(USAGE);
      return command === undefined ? 2 : 0;
    } else throw new UsageError(`unknown command ${JSON.stringify(command)}`);
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`pets-db: ${err.message}\n${USAGE}`);
      return 2;
    }
    process.stderr.write(`pets-db: ${messageOf(err)}\n`);
    return 1;
  }
}

failOnOutputError("pets-db");
process.exitCode = await main(process.argv.slice(2));
