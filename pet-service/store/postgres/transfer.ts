import pg from "pg";
import { petOfRow, type Pet, type PetRow } from "../pet-store.ts";
import { POSTGRES_STATEMENTS } from "./store.ts";
import type { KeyRecord, TransferSource, TransferTarget } from "../transfer.ts";

/**
 * Both ends of a copy on a PostgreSQL database (transfer.ts), each on a connection of its own;
 * the schema is the caller's to bring up to date first (opening the store does).
 */

/** The pets sequence's last value (NULL before its first use) or the highest id, whichever is higher; as text. */
const LAST_ISSUED_ID = `SELECT greatest(coalesce(pg_sequence_last_value(pg_get_serial_sequence('pets', 'id')), 0),
                                        coalesce((SELECT max(id) FROM pets), 0))::text AS id`;

async function lastIssuedId(client: pg.Client): Promise<bigint> {
  const { rows } = await client.query<{ id: string }>(LAST_ISSUED_ID);
  return BigInt(rows[0]!.id);
}

async function connect(url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, application_name: "pets-db copy" });
  await client.connect();
  return client;
}

/** Reads the database in one REPEATABLE READ, read-only transaction: one snapshot for every query. */
export async function postgresTransferSource(url: string): Promise<TransferSource> {
  const client = await connect(url);
  await client.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  return {
    async counts(liveAfter) {
      const { rows } = await client.query<{ pets: number; keys: number }>(
        "SELECT (SELECT count(*) FROM pets)::int AS pets, (SELECT count(*) FROM idempotency_keys WHERE created_at > $1)::int AS keys",
        [liveAfter],
      );
      return rows[0]!;
    },
    async pets(afterId, limit) {
      const { rows } = await client.query<PetRow>(POSTGRES_STATEMENTS.list, [
        String(afterId),
        limit,
      ]);
      return rows.map(petOfRow);
    },
    async *keys(liveAfter, batchSize) {
      // A cursor of the snapshot: no ordering or index needed to page through them.
      await client.query(
        `DECLARE live_keys NO SCROLL CURSOR FOR
           SELECT request_id AS "requestId", request_hash AS "requestHash", pet_id AS "petId", created_at AS "createdAt"
             FROM idempotency_keys WHERE created_at > $1`,
        [liveAfter],
      );
      for (;;) {
        const { rows } = await client.query<{ requestId: string; requestHash: string; petId: string; createdAt: string }>(
          `FETCH ${Number(batchSize)} FROM live_keys`,
        );
        if (rows.length === 0) break;
        yield rows.map((k) => ({ ...k, petId: BigInt(k.petId), createdAt: Number(k.createdAt) }));
      }
      await client.query("CLOSE live_keys");
    },
    async pageTokenSecret() {
      const { rows } = await client.query<{ value: Buffer }>("SELECT value FROM secrets WHERE name = 'page_token'");
      return rows[0]!.value;
    },
    lastIssuedId: () => lastIssuedId(client),
    async close() {
      await client.query("ROLLBACK").catch(() => {});
      await client.end();
    },
  };
}

/** Writes the database in one transaction; batches go in as arrays (unnest): one statement per batch. */
export async function postgresTransferTarget(url: string): Promise<TransferTarget> {
  const client = await connect(url);
  await client.query("BEGIN");
  // Concurrent creates of a running replica would interleave ids with the copied ones: hold them off.
  await client.query("LOCK TABLE pets, idempotency_keys IN EXCLUSIVE MODE");
  let ended: Promise<void> | undefined;
  const end = (sql: string) => (ended ??= client.query(sql).then(() => undefined).finally(() => client.end()));
  return {
    async isEmpty() {
      const { rows } = await client.query<{ used: boolean }>("SELECT EXISTS (SELECT 1 FROM pets) OR EXISTS (SELECT 1 FROM idempotency_keys) AS used");
      return !rows[0]!.used;
    },
    // TRUNCATE keeps the identity where it is (no RESTART IDENTITY): ids stay used.
    clear: async () => void (await client.query("TRUNCATE idempotency_keys, pets")),
    async insertPets(pets: Pet[]) {
      await client.query(
        `INSERT INTO pets (id, name, category_id, status) OVERRIDING SYSTEM VALUE
         SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[])`,
        [pets.map((p) => String(p.id)), pets.map((p) => p.name), pets.map((p) => String(p.categoryId)), pets.map((p) => p.status)],
      );
    },
    async insertKeys(keys: KeyRecord[]) {
      await client.query(
        `INSERT INTO idempotency_keys (request_id, request_hash, pet_id, created_at)
         SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[])`,
        [keys.map((k) => k.requestId), keys.map((k) => k.requestHash), keys.map((k) => String(k.petId)), keys.map((k) => k.createdAt)],
      );
    },
    async setPageTokenSecret(secret) {
      await client.query(
        "INSERT INTO secrets (name, value) VALUES ('page_token', $1) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
        [secret],
      );
    },
    lastIssuedId: () => lastIssuedId(client),
    async moveIdsPast(id) {
      // setval(…, n, true): the next nextval is n + 1. An empty history (0) leaves the sequence at its start.
      if (id > 0n) await client.query("SELECT setval(pg_get_serial_sequence('pets', 'id'), $1::bigint, true)", [String(id)]);
    },
    commit: () => end("COMMIT"),
    rollback: () => end("ROLLBACK").catch(() => {}),
  };
}
