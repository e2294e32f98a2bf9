import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { KeyRecord } from "../../../../lib/key-record.ts";
import { StorageUnavailableError } from "../../../../lib/storage-faults.ts";
import { InvalidCursorError, RegistryConflictError, type KeyRegistry, type NewEvent } from "../../../../keys/registry/store.ts";
import { webhookCases } from "./webhook-cases.ts";
import { DAY_MS, HOUR_MS, type UsageBucketWrite, type UsageReportWrite } from "../../../../keys/registry/usage.ts";

/** A registry under test on a database of its own; `reopen` closes it and opens the same database again. */
export interface RegistryHarness {
  registry: KeyRegistry;
  reopen(): Promise<KeyRegistry>;
  /** A second registry on the same database (another process or replica). */
  another(): Promise<KeyRegistry>;
  /** The versions recorded in key_registry_migrations. */
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

const counts = (c: Partial<UsageBucketWrite> & Pick<UsageBucketWrite, "keyId" | "hour">): UsageBucketWrite => ({
  "2xx": 0,
  "4xx": 0,
  "5xx": 0,
  limited: 0,
  banned: 0,
  forbidden: 0,
  ...c,
});
let reports = 0;
const report = (r: Partial<UsageReportWrite>): UsageReportWrite => ({
  reportId: `report-${++reports}`,
  at: T0,
  actor: "gw",
  buckets: [],
  bans: [],
  lastUsed: [],
  dailyLimits: {},
  thresholdPercents: [80, 100],
  ...r,
});

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
    const anotherRegistry = () => h.another();
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

    it("usage reports add up exactly by hour and UTC day; a replayed report id counts once", async () => {
      const r = record();
      await reg().createKey(r, event(r.id));
      const h = T0 + 23 * HOUR_MS;
      const seq = await reg().lastSeq();
      const first = report({ buckets: [counts({ keyId: r.id, hour: h, "2xx": 5, "4xx": 1 }), counts({ keyId: r.id, hour: h + HOUR_MS, "2xx": 2, limited: 3 })] });
      expect(await reg().applyUsageReport(first)).toEqual({ duplicate: false, events: [] });
      expect(await reg().applyUsageReport(first)).toEqual({ duplicate: true, events: [] });
      const other = await anotherRegistry();
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 ? other : reg()).applyUsageReport(report({ buckets: [counts({ keyId: r.id, hour: h, "2xx": 1, "5xx": 1, banned: 1, forbidden: 2 })] })),
        ),
      );
      expect(await reg().usageHistory(r.id, "hour", T0, T0 + 2 * DAY_MS)).toEqual([
        { start: h, "2xx": 25, "4xx": 1, "5xx": 20, limited: 0, banned: 20, forbidden: 40 },
        { start: h + HOUR_MS, "2xx": 2, "4xx": 0, "5xx": 0, limited: 3, banned: 0, forbidden: 0 },
      ]);
      expect(await reg().usageHistory(r.id, "day", T0 - DAY_MS, T0 + 2 * DAY_MS)).toEqual([
        { start: T0, "2xx": 25, "4xx": 1, "5xx": 20, limited: 0, banned: 20, forbidden: 40 },
        { start: T0 + DAY_MS, "2xx": 2, "4xx": 0, "5xx": 0, limited: 3, banned: 0, forbidden: 0 },
      ]);
      // Counting writes no event.
      expect(await reg().lastSeq()).toBe(seq);
    });

    it("history ranges are [from, to); other keys' buckets never show", async () => {
      const [a, b] = [record(), record()];
      for (const k of [a, b]) await reg().createKey(k, event(k.id));
      await reg().applyUsageReport(report({ buckets: [0, 1, 2, 3].map((i) => counts({ keyId: a.id, hour: T0 + i * HOUR_MS, "2xx": i + 1 })) }));
      await reg().applyUsageReport(report({ buckets: [counts({ keyId: b.id, hour: T0 + HOUR_MS, "4xx": 9 })] }));
      const starts = async (from: number, to: number) => (await reg().usageHistory(a.id, "hour", from, to)).map((x) => x["2xx"]);
      expect(await starts(T0 + HOUR_MS, T0 + 3 * HOUR_MS)).toEqual([2, 3]);
      expect(await starts(T0 + HOUR_MS + 1, T0 + 3 * HOUR_MS + 1)).toEqual([3, 4]);
      expect(await starts(T0 + 4 * HOUR_MS, T0 + 9 * HOUR_MS)).toEqual([]);
      expect(await reg().usageHistory("key_nobody", "day", 0, T0 * 2)).toEqual([]);
    });

    it("a report moves last use forward, appends key.banned once per ban and usage.threshold at 80 % and 100 % once per key and UTC day", async () => {
      const r = record();
      await reg().createKey(r, event(r.id));
      const limits = { [r.id]: 10 };
      const applied = async (w: Partial<UsageReportWrite>) => (await reg().applyUsageReport(report({ dailyLimits: limits, ...w }))).events;
      expect(await applied({ buckets: [counts({ keyId: r.id, hour: T0, "2xx": 7, limited: 50 })], lastUsed: [{ keyId: r.id, at: T0 + 5 }] })).toEqual([]);
      const at80 = await applied({ buckets: [counts({ keyId: r.id, hour: T0 + HOUR_MS, "4xx": 1 })], lastUsed: [{ keyId: r.id, at: T0 + 2 }] });
      expect(at80).toMatchObject([{ type: "usage.threshold", keyId: r.id, actor: "gw", changes: { window: "day", percent: 80, used: 8, limit: 10 } }]);
      expect((await reg().getKey(r.id))!.lastUsedAt).toBe(T0 + 5);
      expect(await applied({ buckets: [counts({ keyId: r.id, hour: T0, "2xx": 1 })] })).toEqual([]);
      // Past both at once the next day: 80 then 100; the day after that again.
      const next = await applied({ buckets: [counts({ keyId: r.id, hour: T0 + DAY_MS, "5xx": 12 })] });
      expect(next.map((e) => e.changes.percent)).toEqual([80, 100]);
      expect(next[1]!.seq).toBe(next[0]!.seq + 1);
      const until = T0 + 900_000;
      const banned = await applied({ bans: [{ keyId: r.id, until }] });
      expect(banned).toMatchObject([{ type: "key.banned", keyId: r.id, changes: { until: new Date(until).toISOString() } }]);
      // The same ban from another gateway (its Retry-After rounded otherwise): no second event.
      expect(await applied({ bans: [{ keyId: r.id, until: until + 1000 }] })).toEqual([]);
      expect(await applied({ bans: [{ keyId: r.id, until: until - 1000 }] })).toEqual([]);
      expect(await applied({ bans: [{ keyId: r.id, until: until + 3_600_000 }] })).toHaveLength(1);
    });

    it("prunes hourly buckets after 35 days and daily ones after 400 (judged at the given time)", async () => {
      const r = record();
      await reg().createKey(r, event(r.id));
      const old = T0 - 40 * DAY_MS;
      await reg().applyUsageReport(report({ buckets: [counts({ keyId: r.id, hour: old, "2xx": 1 }), counts({ keyId: r.id, hour: T0, "2xx": 2 })] }));
      const now = T0 + HOUR_MS;
      await reg().pruneUsage(now);
      expect((await reg().usageHistory(r.id, "hour", 0, now)).map((b) => b.start)).toEqual([T0]);
      expect((await reg().usageHistory(r.id, "day", 0, now)).map((b) => b.start)).toEqual([old, T0]);
      await reg().pruneUsage(T0 + 35 * DAY_MS);
      expect(await reg().usageHistory(r.id, "hour", 0, now)).toHaveLength(1);
      await reg().pruneUsage(T0 + 35 * DAY_MS + 1);
      expect(await reg().usageHistory(r.id, "hour", 0, now)).toEqual([]);
      await reg().pruneUsage(old + 400 * DAY_MS + 1);
      expect((await reg().usageHistory(r.id, "day", 0, T0 + 400 * DAY_MS)).map((b) => b.start)).toEqual([T0]);
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
      expect(versions).toEqual(versions.map((_, i) => i + 1));
      expect(versions.length).toBeGreaterThanOrEqual(3);
    });

    webhookCases(reg, () => h.another());
  });
}
