import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { IDEMPOTENCY_TTL_MS, requestHash } from "../../../../pet-service/idempotency.ts";
import { StorageUnavailableError } from "../../../../lib/storage-faults.ts";
import {
  type IdempotencyKey,
  type NewPet,
  type Pet,
  type PetStatus,
  type PetStore,
} from "../../../../pet-service/store/pet-store.ts";

/** A store under test on a database of its own; `reopen` closes it and opens the same database again. */
export interface StoreFixture {
  store: PetStore;
  reopen(): Promise<PetStore>;
  /** A second store on the same database, as another replica would open it (closed by destroy). */
  replica(): Promise<PetStore>;
  /** Moves the database's id sequence: new ids are above `id` (pets-db copy does this). */
  moveIdsPast(id: bigint): Promise<void>;
  /** Closes the stores (if open) and removes the database. */
  destroy(): Promise<void>;
  /**
   * Takes the database's write lock from outside (another connection or process) and keeps it
   * past the store's lock wait; resolves with the function that releases it.
   */
  holdWriteLock(): Promise<() => Promise<void>>;
}

const INT64_MAX = 2n ** 63n - 1n;
const STATUSES: readonly PetStatus[] = ["available", "pending", "sold"];
const newPet = (name: string, status: PetStatus = "available", categoryId = 1n): NewPet => ({ name, categoryId, status });
const keyFor = (requestId: string, pet: NewPet, now: number): IdempotencyKey => ({
  requestId,
  requestHash: requestHash(pet),
  now,
  expiredAt: now - IDEMPOTENCY_TTL_MS,
});

/** Every page of `status` (or all pets) with pages of `limit`, by keyset: after the last id served. */
export async function walk(store: PetStore, limit: number, status?: PetStatus): Promise<Pet[][]> {
  const pages: Pet[][] = [];
  let afterId: bigint | undefined;
  for (;;) {
    const page = await store.list({ limit, ...(status && { status }), ...(afterId !== undefined && { afterId }) });
    if (page.length === 0) return pages;
    pages.push(page);
    afterId = page[page.length - 1]!.id;
  }
}

/**
 * The PetStore contract (pet-service/store/pet-store.ts), run against every store: ids, exact
 * int64, status, ordering and filters, keyset paging, the page-token secret, idempotent creates.
 * Each store's test file calls it with a fixture on a private database.
 */
export function petStoreConformance(name: string, open: () => Promise<StoreFixture>): void {
  describe(`PetStore conformance: ${name}`, () => {
    let fixture: StoreFixture;
    let store: PetStore;
    /** Every pet this suite created, in creation order. */
    const created: Pet[] = [];
    const create = async (pet: NewPet) => {
      const stored = await store.create(pet);
      created.push(stored);
      return stored;
    };
    const byId = () => [...created].sort((a, b) => (a.id < b.id ? -1 : 1));

    beforeAll(async () => {
      fixture = await open();
      store = fixture.store;
    });
    afterAll(async () => {
      await fixture?.destroy();
    });

    it("stores a pet under a new id and gives it back exactly, int64 category ids included", async () => {
      const pet = await create(newPet("Rex", "pending", INT64_MAX));
      expect(pet).toEqual({ id: expect.any(BigInt), name: "Rex", categoryId: INT64_MAX, status: "pending" });
      expect(pet.id > 0n).toBe(true);
      expect(await store.get(pet.id)).toEqual(pet);
      expect(await store.get(pet.id + 1_000_000n)).toBeUndefined();
      expect(await store.get(INT64_MAX)).toBeUndefined();
    });

    it("gives concurrent creates distinct ids, increasing in the order they were acknowledged", async () => {
      const pets = await Promise.all(Array.from({ length: 120 }, (_, i) => create(newPet(`c${i}`, STATUSES[i % 3]))));
      expect(new Set(pets.map((p) => p.id)).size).toBe(pets.length);
      const next = await create(newPet("after"));
      expect(pets.every((p) => p.id < next.id)).toBe(true);
    });

    it("lists in ascending id order within the limit, every status or one", async () => {
      const all = byId();
      expect(await store.list({ limit: 5 })).toEqual(all.slice(0, 5));
      for (const status of STATUSES) {
        expect(await store.list({ limit: 100, status })).toEqual(all.filter((p) => p.status === status).slice(0, 100));
      }
    });

    it("pages by keyset: after an id, each pet exactly once, ascending, under the same filter", async () => {
      const all = byId();
      const pages = await walk(store, 7);
      expect(pages.slice(0, -1).every((page) => page.length === 7)).toBe(true);
      expect(pages.flat()).toEqual(all);
      for (const status of STATUSES) {
        expect((await walk(store, 3, status)).flat()).toEqual(all.filter((p) => p.status === status));
      }
      const last = all[all.length - 1]!;
      expect(await store.list({ limit: 10, afterId: last.id })).toEqual([]);
      expect(await store.list({ limit: 2, afterId: all[0]!.id })).toEqual(all.slice(1, 3));
      // A position needs no pet of its own: the next page starts after it.
      expect(await store.list({ limit: 1, afterId: all[0]!.id + 0n, status: all[1]!.status })).toEqual(
        all.slice(1).filter((p) => p.status === all[1]!.status).slice(0, 1),
      );
      expect(await store.list({ limit: 100, afterId: INT64_MAX })).toEqual([]);
    });

    it("keeps its page-token secret (16+ random bytes) across a reopen", async () => {
      const secret = Buffer.from(store.pageTokenSecret);
      expect(secret.length).toBeGreaterThanOrEqual(16);
      expect(secret.equals(Buffer.alloc(secret.length))).toBe(false);
      store = await fixture.reopen();
      expect(store.pageTokenSecret.equals(secret)).toBe(true);
      expect((await walk(store, 50)).flat()).toEqual(byId());
    });

    it("creates once per idempotency key: replays the same request, refuses another, forgets the key after its TTL", async () => {
      const now = Date.now();
      const pet = newPet("Once", "sold");
      const first = await store.createOnce(pet, keyFor("k:1", pet, now));
      expect(first).toEqual({ outcome: "created", pet: { ...pet, id: expect.any(BigInt) } });
      if (first.outcome !== "created") return;
      created.push(first.pet);
      expect(await store.createOnce(pet, keyFor("k:1", pet, now + 1000))).toEqual({ outcome: "replayed", pet: first.pet });
      const other = newPet("Other");
      expect(await store.createOnce(other, keyFor("k:1", other, now + 2000))).toEqual({ outcome: "key_reused" });

      const later = now + IDEMPOTENCY_TTL_MS + 1;
      const again = await store.createOnce(pet, keyFor("k:1", pet, later));
      expect(again.outcome).toBe("created");
      if (again.outcome === "created") {
        created.push(again.pet);
        expect(again.pet.id > first.pet.id).toBe(true);
      }
    });

    it("reports a write its storage cannot take now as StorageUnavailableError, stores nothing, and writes once the fault clears", async () => {
      const release = await fixture.holdWriteLock();
      let failure: unknown;
      try {
        const now = Date.now();
        const locked = newPet("Locked out");
        const [plain, once] = await Promise.allSettled([store.create(locked), store.createOnce(locked, keyFor("k:locked", locked, now))]);
        failure = plain.status === "rejected" ? plain.reason : undefined;
        expect(once.status === "rejected" && once.reason).toBeInstanceOf(StorageUnavailableError);
        expect((await store.list({ limit: 1000 })).map((p) => p.name)).not.toContain("Locked out"); // reads go on
      } finally {
        await release();
      }
      expect(failure).toBeInstanceOf(StorageUnavailableError);
      expect((failure as StorageUnavailableError).fault).toBe("busy");
      const after = await create(newPet("After the lock"));
      expect(await store.get(after.id)).toEqual(after);
    });

    it("stores one pet for concurrent creates under one key on two replicas, and answers each with it", async () => {
      const other = await fixture.replica();
      const now = Date.now();
      const pet = newPet("Across replicas", "pending");
      const results = await Promise.all(
        Array.from({ length: 16 }, (_, i) => (i % 2 ? other : store).createOnce(pet, keyFor("k:replicas", pet, now))),
      );
      const winners = results.flatMap((r) => (r.outcome === "created" ? [r.pet] : []));
      expect(winners).toHaveLength(1);
      expect(results.filter((r) => r.outcome === "replayed")).toEqual(Array(15).fill({ outcome: "replayed", pet: winners[0] }));
      created.push(winners[0]!);
    });

    it("a walk never repeats a pet and never skips one that existed when it began, while another replica creates", async () => {
      const other = await fixture.replica();
      const existed = byId();
      let creating = true;
      const writers = Array.from({ length: 6 }, async (_, w) => {
        for (let i = 0; creating && i < 200; i++) created.push(await other.create(newPet(`during-${w}-${i}`, STATUSES[i % 3])));
      });
      const walked: Pet[] = [];
      try {
        for (const page of await walk(store, 4)) walked.push(...page);
      } finally {
        creating = false;
        await Promise.all(writers);
      }
      const ids = walked.map((p) => p.id);
      expect(ids.every((id, i) => i === 0 || id > ids[i - 1]!)).toBe(true);
      const seen = new Set(ids);
      expect(existed.filter((p) => !seen.has(p.id))).toEqual([]);
    });

    it("stores one pet for concurrent creates under one key, and answers each with it", async () => {
      const now = Date.now();
      const pet = newPet("Concurrent");
      const results = await Promise.all(Array.from({ length: 20 }, () => store.createOnce(pet, keyFor("k:2", pet, now))));
      const ids = new Set(results.map((r) => (r.outcome === "key_reused" ? undefined : r.pet.id)));
      expect(ids.size).toBe(1);
      expect(results.filter((r) => r.outcome === "created")).toHaveLength(1);
      const [id] = ids;
      const winner = results.find((r) => r.outcome === "created");
      if (winner?.outcome === "created") created.push(winner.pet);
      expect((await store.list({ limit: 100, afterId: id! - 1n })).filter((p) => p.name === "Concurrent")).toHaveLength(1);
    });

    // Last: it moves the sequence to the top of int64.
    it("hands out ids exactly up to the top of int64, and pages there", async () => {
      await fixture.moveIdsPast(INT64_MAX - 3n);
      const top = [await create(newPet("Top 1", "sold")), await create(newPet("Top 2", "sold"))];
      expect(top.map((p) => p.id)).toEqual([INT64_MAX - 2n, INT64_MAX - 1n]);
      expect(await store.get(INT64_MAX - 1n)).toEqual(top[1]);
      expect(await store.list({ limit: 5, status: "sold", afterId: INT64_MAX - 3n })).toEqual(top);
      expect((await walk(store, 50)).flat()).toEqual(byId());
    });
  });
}
