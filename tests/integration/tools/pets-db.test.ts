import { access } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IDEMPOTENCY_TTL_MS, requestHash } from "../../../pet-service/idempotency.ts";
import { createPageTokens } from "../../../pet-service/page-token.ts";
import { openPetStore } from "../../../pet-service/store/open-store.ts";
import type { NewPet, Pet, PetStatus, PetStore } from "../../../pet-service/store/pet-store.ts";
import { testDbPath } from "../../../testkit/pet-service.ts";
import { createTestDatabase, type TestDatabase } from "../../../testkit/postgres.ts";
import { launchNode, type Exit } from "../../../testkit/process.ts";
import { walk } from "../pet-service/store/conformance.ts";

// npm run pets-db -- copy: SQLite → PostgreSQL → SQLite with 10,000 pets, as an operator runs it.

const PETS = 10_000;
const STATUSES: PetStatus[] = ["available", "pending", "sold"];
const INT64_MAX = 2n ** 63n - 1n;

const copy = async (...args: string[]): Promise<Exit> => (await launchNode("tools/pets-db.ts", {}, ["copy", ...args])).exited;

let sqliteFrom: Awaited<ReturnType<typeof testDbPath>>;
let sqliteBack: Awaited<ReturnType<typeof testDbPath>>;
let pg: TestDatabase;
const now = Date.now();
/** Every pet of the source, ascending. */
let original: Pet[];
let secret: Buffer;
const liveKeys: { requestId: string; pet: NewPet; id: bigint }[] = [];

/** Every pet of `store`, ascending, by keyset pages of 1000. */
const everyPet = async (store: PetStore): Promise<Pet[]> => (await walk(store, 1000)).flat();

const keyAt = (requestId: string, pet: NewPet, at: number) => ({ requestId, requestHash: requestHash(pet), now: at, expiredAt: at - IDEMPOTENCY_TTL_MS });

/** Opens `petsDb`, runs `use`, closes it. */
async function withStore<T>(petsDb: string, use: (store: PetStore) => Promise<T>): Promise<T> {
  const store = await openPetStore(petsDb);
  try {
    return await use(store);
  } finally {
    await store.close();
  }
}

/** The target has exactly the source's pets, live keys and secret, and hands out ids after them. */
async function expectSameData(petsDb: string, idsAbove: bigint): Promise<void> {
  await withStore(petsDb, async (store) => {
    expect(await everyPet(store)).toEqual(original);
    expect(store.pageTokenSecret.equals(secret)).toBe(true);
    // A cursor issued by the source goes on where it stopped.
    const cursor = createPageTokens(secret).encode({ afterId: original[4_999]!.id, status: "sold" });
    const position = createPageTokens(store.pageTokenSecret).decode(cursor, "sold");
    expect(position).toEqual({ afterId: original[4_999]!.id });
    // Live keys replay their pet; the expired one was not copied, so it creates anew.
    for (const key of liveKeys) {
      expect(await store.createOnce(key.pet, keyAt(key.requestId, key.pet, Date.now()))).toEqual({ outcome: "replayed", pet: { ...key.pet, id: key.id } });
    }
    const fresh = await store.createOnce({ name: "Expired", categoryId: 1n, status: "sold" }, keyAt("key_a:expired", { name: "Expired", categoryId: 1n, status: "sold" }, Date.now()));
    expect(fresh.outcome).toBe("created");
    if (fresh.outcome === "created") expect(fresh.pet.id > idsAbove).toBe(true);
  });
}

beforeAll(async () => {
  sqliteFrom = await testDbPath();
  sqliteBack = await testDbPath();
  pg = await createTestDatabase();
  await withStore(sqliteFrom.dbPath, async (store) => {
    for (let i = 0; i < PETS; i += 500) {
      await Promise.all(
        Array.from({ length: Math.min(500, PETS - i) }, (_, j) =>
          store.create({ name: `Pet ${i + j} 🐕`, categoryId: (i + j) % 10 === 0 ? INT64_MAX : BigInt(1 + ((i + j) % 7)), status: STATUSES[(i + j) % 3]! }),
        ),
      );
    }
    for (let k = 0; k < 20; k++) {
      const pet: NewPet = { name: `Keyed ${k}`, categoryId: 5n, status: "pending" };
      const result = await store.createOnce(pet, keyAt(`key_a:order-${k}`, pet, now - k * 60_000));
      if (result.outcome === "created") liveKeys.push({ requestId: `key_a:order-${k}`, pet, id: result.pet.id });
    }
    // A day old: expired, not to be copied.
    const old: NewPet = { name: "Yesterday", categoryId: 1n, status: "sold" };
    await store.createOnce(old, keyAt("key_a:expired", old, now - IDEMPOTENCY_TTL_MS - 60_000));
    original = await everyPet(store);
    secret = Buffer.from(store.pageTokenSecret);
  });
}, 120_000);

afterAll(async () => {
  await pg?.drop();
  await sqliteFrom?.remove();
  await sqliteBack?.remove();
});

describe("npm run pets-db -- copy", () => {
  it("copies SQLite → PostgreSQL: every pet under its id, live keys, the secret; progress on stderr", { timeout: 120_000 }, async () => {
    expect(original).toHaveLength(PETS + 21);
    const result = await copy("--from", sqliteFrom.dbPath, "--to", pg.url);
    expect(result.stderr).toMatch(/^pets-db copy: \d+\/10021 pets, \d+\/20 idempotency keys$/m);
    expect(result.stderr.trim().split("\n").at(-1)).toBe("pets-db copy: 10021/10021 pets, 20/20 idempotency keys");
    expect(result.stdout).toMatch(/^copied 10021 pets and 20 live idempotency keys from .+ to postgres:\/\/.+; new ids start after 10021\n$/);
    expect(result.code).toBe(0);
    expect(await pg.query("SELECT count(*)::int AS n FROM idempotency_keys")).toEqual([{ n: 20 }]);
    await expectSameData(pg.url, 10_021n);
  });

  it("refuses a target that holds pets, changing nothing; --replace copies over it", { timeout: 120_000 }, async () => {
    const before = await pg.query("SELECT count(*)::int AS n, max(id)::text AS max FROM pets");
    const refused = await copy("--from", sqliteFrom.dbPath, "--to", pg.url);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe("pets-db: the target already holds pets or idempotency keys; copy into an empty database, or pass --replace to delete them first\n");
    expect(await pg.query("SELECT count(*)::int AS n, max(id)::text AS max FROM pets")).toEqual(before);

    const replaced = await copy("--from", sqliteFrom.dbPath, "--to", pg.url, "--replace");
    expect(replaced.code).toBe(0);
    // The pet the previous test created on PostgreSQL is gone, but its id stays used.
    await withStore(pg.url, async (store) => {
      expect(await everyPet(store)).toEqual(original);
      expect((await store.create({ name: "Next", categoryId: 1n, status: "available" })).id).toBeGreaterThan(10_022n);
    });
  });

  it("copies PostgreSQL → SQLite: the same pets and ids, new ids past every id PostgreSQL handed out", { timeout: 120_000 }, async () => {
    // The pet just created on PostgreSQL is not in `original`: remove it so the data compares equal,
    // while its id stays handed out (the copy must move past it).
    const [{ max }] = (await pg.query<{ max: string }>("DELETE FROM pets WHERE name = 'Next' RETURNING id::text AS max")) as [{ max: string }];
    const result = await copy("--from", pg.url, "--to", sqliteBack.dbPath);
    expect(result.code).toBe(0);
    await access(sqliteBack.dbPath);
    expect(result.stdout).toContain(`new ids start after ${max}`);
    await expectSameData(sqliteBack.dbPath, BigInt(max));
  });

  it("answers bad usage with exit code 2, a missing source with 1", async () => {
    expect((await copy("--from", sqliteFrom.dbPath)).code).toBe(2);
    expect((await copy("--from", pg.url, "--to", pg.url)).stderr).toMatch(/^pets-db: --from and --to name the same database\n/);
    const missing = await copy("--from", `${sqliteFrom.dbPath}.nope`, "--to", `${sqliteBack.dbPath}.new`);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^pets-db: --from ".+\.nope": no such SQLite file\n$/);
  });
});
