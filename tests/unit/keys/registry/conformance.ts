import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KeyRecord } from "../../../../lib/key-record.ts";
import { StorageUnavailableError } from "../../../../lib/storage-faults.ts";
import { InvalidCursorError, RegistryConflictError, type KeyRegistry, type NewEvent } from "../../../../keys/registry/store.ts";

/** A registry under test on a database of its own; `reopen` closes it and opens the same database again. */
export interface RegistryHarness {
  registry: KeyRegistry;
  reopen(): Promise<KeyRegistry>;
  /** A second registry on the same database (another process or replica). */
  another(): Promise<KeyRegistry>;
  /** The versions recorded in schema_migrations. */
  migrationVersions(): Promise<number[]>;
  /** Another session holds the write lock (past the store's wait) until the returned function runs. */
  holdWriteLock(): Promise<() => Promise<void>>;
  destroy(): Promise<void>;
}

const T0 = Date.UTC(2030, 0, 1);
let ids = 0;

function record(overrides: Partial<KeyRecord> = {}): KeyRecord {
  return {
    id: `key_${String(++ids).padStart(16, "0")}`,
    name: "Acme",
    ownerId: null,
    metadata: { tier: "gold", nested: { b: 1, a: [2] } },
    plan: "pro",
    limits: { perMinute: 100, perDay: 10_000 },
    scopes: ["pets:read", "pets:write"],
    allowedCidrs: [],
    createdAt: T0,
    expiresAt: null,
    revokedAt: null,
    generation: 0,
    graceUntil: {},
    kid: "kid0000000000000",
    lastUsedAt: null,
    ...overrides,
  };
}

const event = (keyId: string | null, type: NewEvent["type"] = "key.created", changes: Record<string, unknown> = {}): NewEvent => ({
  at: T0,
  actor: "cli",
  type,
  keyId,
  changes,
});

/** One suite, every store: what keys/operations and the key service rely on. */
export function registryConformance(name: string, open: () => Promise<RegistryHarness>): void {
  describe(`KeyRegistry conformance: ${name}`, () => {
    let h: RegistryHarness;
    const reg = () => h.registry;
    beforeAll(async () => {
      h = await open();
    });
    afterAll(() => h?.destroy());

    it("creates a key with its event and gives the record back exactly; a taken id is a RegistryConflictError that writes nothing", async () => {
      const seqBefore = await reg().lastSeq();
      const r = record({ ownerId: "cust_1", allowedCidrs: ["10.0.0.0/8", "2001:db8::/32"], scopes: ["pets:read"], expiresAt: T0 + 5000, graceUntil: { "0": T0 + 60_000 } });
      const e = await reg().createKey(r, event(r.id, "key.created", { name: "Acme" }));
      expect(e).toEqual({ seq: seqBefore + 1, at: T0, actor: "cli", type: "key.created", keyId: r.id, changes: { name: "Acme" } });
      expect(await reg().getKey(r.id)).toEqual(r);
      expect(Object.keys((await reg().getKey(r.id))!.metadata.nested as object)).toEqual(["b", "a"]);
      await expect(reg().createKey({ ...r, name: "other" }, event(r.id))).rejects.toBeInstanceOf(RegistryConflictError);
      expect(await reg().lastSeq()).toBe(seqBefore + 1);
      expect((await reg().getKey(r.id))!.name).toBe("Acme");
      expect(await reg().getKey("key_nope")).toBeUndefined();
    });

    it("updates a key with its event (revoke included); last use only moves forward and writes no event", async () => {
      const r = record();
      await reg().createKey(r, event(r.id));
      const revoked = { ...r, revokedAt: T0 + 10, plan: "business" as const, limits: { perMinute: 1000, perDay: 100_000 } };
      const e = await reg().updateKey(revoked, event(r.id, "key.revoked", { revokedAt: new Date(T0 + 10).toISOString() }));
      expect(e.type).toBe("key.revoked");
      expect(await reg().getKey(r.id)).toEqual(revoked);
      const seq = await reg().lastSeq();
      await reg().touchLastUsed(r.id, T0 + 50);
      await reg().touchLastUsed(r.id, T0 + 20);
      expect((await reg().getKey(r.id))!.lastUsedAt).toBe(T0 + 50);
      expect(await reg().lastSeq()).toBe(seq);
      await expect(reg().updateKey(record(), event(null, "key.updated"))).rejects.toThrow();
      expect(await reg().lastSeq()).toBe(seq);
    });

    it("updates with `previous` only while the stored record is still that one (compare-and-set); never overwrites last use", async () => {
      const r = record({ metadata: { a: 1 }, graceUntil: { "0": T0 } });
      await reg().createKey(r, event(r.id));
      await reg().touchLastUsed(r.id, T0 + 9);
      const first = { ...r, name: "first" };
      await reg().updateKey(first, event(r.id, "key.updated"), r);
      const seq = await reg().lastSeq();
      const err = await reg()
        .updateKey({ ...r, name: "stale" }, event(r.id, "key.updated"), r)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RegistryConflictError);
      expect(await reg().lastSeq()).toBe(seq);
      expect(await reg().getKey(r.id)).toEqual({ ...first, lastUsedAt: T0 + 9 });
      // The record read back (JSON columns included) matches itself as `previous`.
      const stored = (await reg().getKey(r.id))!;
      await reg().updateKey({ ...stored, revokedAt: T0 + 1, metadata: { a: 1, b: [1] } }, event(r.id, "key.revoked"), stored);
      expect(await reg().getKey(r.id)).toMatchObject({ revokedAt: T0 + 1, metadata: { a: 1, b: [1] }, lastUsedAt: T0 + 9 });
    });

    it("lists oldest first, by filters (owner, plan, state at `now`), in cursor pages that cover every key once", async () => {
      const owner = `owner_${ids}`;
      const made: KeyRecord[] = [];
      for (let i = 0; i < 7; i++) {
        // Two keys share each creation time: the id orders them.
        const r = record({ ownerId: owner, createdAt: T0 + Math.floor(i / 2), plan: i % 2 ? "free" : "pro" });
        made.push(r);
      }
      made[5]!.revokedAt = T0 + 1;
      made[6]!.expiresAt = T0 + 100;
      for (const r of [...made].reverse()) await reg().createKey(r, event(r.id));
      const pages: string[][] = [];
      let cursor: string | undefined;
      do {
        const page = await reg().listKeys({ ownerId: owner, now: T0 }, 3, cursor);
        pages.push(page.items.map((k) => k.id));
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
      expect(pages).toEqual([made.slice(0, 3).map((k) => k.id), made.slice(3, 6).map((k) => k.id), [made[6]!.id]]);
      const listed = async (filter: Parameters<KeyRegistry["listKeys"]>[0]) => (await reg().listKeys(filter, 100)).items.map((k) => k.id);
      expect(await listed({ ownerId: owner, plan: "free", now: T0 })).toEqual([made[1], made[3], made[5]].map((k) => k!.id));
      expect(await listed({ ownerId: owner, state: "revoked", now: T0 })).toEqual([made[5]!.id]);
      expect(await listed({ ownerId: owner, state: "expired", now: T0 + 100 })).toEqual([made[6]!.id]);
      expect(await listed({ ownerId: owner, state: "active", now: T0 })).toEqual([0, 1, 2, 3, 4, 6].map((i) => made[i]!.id));
      expect(await listed({ ownerId: owner, state: "active", now: T0 + 100 })).toEqual([0, 1, 2, 3, 4].map((i) => made[i]!.id));
      expect((await reg().listKeys({ ownerId: owner, now: T0 }, 7)).nextCursor).toBeNull();
      await expect(reg().listKeys({ now: T0 }, 3, "not-a-cursor")).rejects.toBeInstanceOf(InvalidCursorError);
    });

    it("numbers events without gaps in commit order, 50 concurrent writers and a second connection included", async () => {
      const r = record();
      await reg().createKey(r, event(r.id));
      const start = await reg().lastSeq();
      const other = await h.another();
      try {
        const written = await Promise.all(
          Array.from({ length: 50 }, (_, i) =>
            (i % 2 ? other : reg()).updateKey({ ...r, name: `n${i}` }, event(r.id, "key.updated", { name: `n${i}` })),
          ),
        );
        expect(written.map((e) => e.seq).sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => start + 1 + i));
        const events = await reg().events(start, 1000);
        expect(events.map((e) => e.seq)).toEqual(Array.from({ length: 50 }, (_, i) => start + 1 + i));
        // The last event is the update now in force.
        expect((await reg().getKey(r.id))!.name).toBe(events.at(-1)!.changes.name);
        expect(await reg().events(start, 10)).toHaveLength(10);
        expect(await reg().events(start + 50, 10)).toEqual([]);
        const appended = await other.appendEvent({ ...event(r.id, "key.banned"), changes: { until: "x" } });
        expect(appended.seq).toBe(start + 51);
        expect(await reg().lastSeq()).toBe(start + 51);
      } finally {
        await other.close();
      }
    });

    it("remembers a create's answer per token and key until it expires; a live claim again is a conflict that creates nothing", async () => {
      const r = record();
      const result = { requestHash: "h1", status: 201, body: '{"id":"x","key":"t"}' };
      await reg().createKey(r, event(r.id), { tokenId: "adm_1", key: "idem-1", expiresAt: T0 + 1000, result });
      expect(await reg().findIdempotent("adm_1", "idem-1", T0 + 999)).toEqual(result);
      expect(await reg().findIdempotent("adm_1", "idem-1", T0 + 1000)).toBeUndefined();
      expect(await reg().findIdempotent("adm_2", "idem-1", T0)).toBeUndefined();
      const second = record();
      await expect(
        reg().createKey(second, { ...event(second.id), at: T0 + 500 }, { tokenId: "adm_1", key: "idem-1", expiresAt: T0 + 2000, result }),
      ).rejects.toBeInstanceOf(RegistryConflictError);
      expect(await reg().getKey(second.id)).toBeUndefined();
      // Expired: the key may be claimed again.
      const later = { requestHash: "h2", status: 201, body: "{}" };
      await reg().createKey(second, { ...event(second.id), at: T0 + 1000 }, { tokenId: "adm_1", key: "idem-1", expiresAt: T0 + 3000, result: later });
      expect(await reg().findIdempotent("adm_1", "idem-1", T0 + 1001)).toEqual(later);
    });

    it("admin tokens: found by hash, listed, revoked once with one event; a taken name is a conflict", async () => {
      const token = { id: "adm_a", name: "ops", scopes: ["keys:read", "keys:write"], hash: "a".repeat(64), createdAt: T0, revokedAt: null };
      const created = await reg().createAdminToken(token, event(null, "admin_token.created", { name: "ops" }));
      expect(created.type).toBe("admin_token.created");
      expect(await reg().findAdminTokenByHash("a".repeat(64))).toEqual(token);
      expect(await reg().findAdminTokenByHash("b".repeat(64))).toBeUndefined();
      await expect(reg().createAdminToken({ ...token, id: "adm_b", hash: "c".repeat(64) }, event(null, "admin_token.created"))).rejects.toBeInstanceOf(
        RegistryConflictError,
      );
      expect(await reg().listAdminTokens()).toEqual([token]);
      const revoked = await reg().revokeAdminToken("adm_a", T0 + 5, event(null, "admin_token.revoked"));
      expect(revoked?.seq).toBe(created.seq + 1);
      expect(await reg().revokeAdminToken("adm_a", T0 + 9, event(null, "admin_token.revoked"))).toBeUndefined();
      expect(await reg().revokeAdminToken("adm_none", T0 + 9, event(null, "admin_token.revoked"))).toBeUndefined();
      expect(await reg().lastSeq()).toBe(created.seq + 1);
      expect((await reg().findAdminTokenByHash("a".repeat(64)))!.revokedAt).toBe(T0 + 5);
    });

    it("counts sign-ups per address and day up to the limit, concurrent ones from another connection included; a new day starts again", async () => {
      const other = await h.another();
      const tries = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? reg() : other).countSignup("192.0.2.1", "2030-01-01", 5)));
      expect(tries.filter(Boolean)).toHaveLength(5);
      expect(await reg().countSignup("192.0.2.1", "2030-01-01", 5)).toBe(false);
      // Another address has its own count; the next day starts at zero (and the old day's rows go).
      expect(await reg().countSignup("2001:db8:1:2::/64", "2030-01-01", 5)).toBe(true);
      for (let i = 0; i < 5; i++) expect(await other.countSignup("192.0.2.1", "2030-01-02", 5)).toBe(true);
      expect(await reg().countSignup("192.0.2.1", "2030-01-02", 5)).toBe(false);
      // Counting writes no event.
      const seq = await reg().lastSeq();
      await reg().countSignup("192.0.2.9", "2030-01-02", 5);
      expect(await reg().lastSeq()).toBe(seq);
    });

    it("a write held past the lock wait is StorageUnavailableError (busy) and writes nothing; reads go on; then it serves again", { timeout: 30_000 }, async () => {
      const r = record();
      const seq = await reg().lastSeq();
      const release = await h.holdWriteLock();
      try {
        const err = await reg()
          .createKey(r, event(r.id))
          .catch((e: unknown) => e);
        expect(err).toBeInstanceOf(StorageUnavailableError);
        expect((err as StorageUnavailableError).fault).toBe("busy");
        expect(await reg().lastSeq()).toBe(seq);
      } finally {
        await release();
      }
      await reg().createKey(r, event(r.id));
      expect(await reg().getKey(r.id)).toEqual(r);
    });

    it("reopening keeps every row and applies no migration twice", async () => {
      const r = record();
      await reg().createKey(r, event(r.id));
      const seq = await reg().lastSeq();
      const versions = await h.migrationVersions();
      await reg().ping();
      const reopened = await h.reopen();
      expect(await reopened.getKey(r.id)).toEqual(r);
      expect(await reopened.lastSeq()).toBe(seq);
      expect(await h.migrationVersions()).toEqual(versions);
      expect(versions).toEqual([1, 2]);
    });
  });
}
