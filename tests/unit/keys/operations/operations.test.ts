import { describe, expect, it } from "vitest";
import { loadPublicKeys, verifyTokenSignature } from "../../../../lib/api-key-format.ts";
import {
  createKeyOperations,
  IdempotencyKeyReusedError,
  KeyConflictError,
  KeyNotFoundError,
  KeyValidationError,
  type KeyOperations,
} from "../../../../keys/operations/index.ts";
import { fakeClock } from "../../../../testkit/fake-clock.ts";
import { tokenPayload, useKeyRegistry, useTempKeysDir } from "../../../../testkit/keys.ts";

const keysDir = useTempKeysDir();
const registry = useKeyRegistry(keysDir);
const T0 = Date.UTC(2030, 0, 1);

function setup(): { ops: KeyOperations; clock: ReturnType<typeof fakeClock> } {
  const clock = fakeClock(T0);
  return { ops: createKeyOperations({ registry: registry(), keysDir: keysDir(), clock: clock.clock }), clock };
}

async function details(promise: Promise<unknown>): Promise<unknown> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(KeyValidationError);
  return (err as KeyValidationError).details;
}

describe("key operations", () => {
  it("create: a signed token (sub, plan, lim, exp), the record with defaults, and one key.created event by the actor", async () => {
    const { ops } = setup();
    const { record, token } = await ops.create({ name: "Acme", plan: "enterprise", perMinute: 7, perDay: 70, expiresAt: T0 + 3_600_000 }, "cli");
    expect(record).toMatchObject({ name: "Acme", plan: "enterprise", limits: { perMinute: 7, perDay: 70 }, scopes: ["pets:read", "pets:write"], allowedCidrs: [], generation: 0 });
    expect(tokenPayload(token)).toMatchObject({ sub: record.id, plan: "enterprise", lim: { m: 7, d: 70 }, iat: T0 / 1000, exp: T0 / 1000 + 3600 });
    expect(verifyTokenSignature(token, loadPublicKeys(keysDir()), T0 / 1000).kid).toBe(record.kid);
    expect(await ops.get(record.id)).toEqual(record);
    const [created] = await registry().events(0, 10);
    expect(created).toMatchObject({ seq: 1, actor: "cli", type: "key.created", keyId: record.id });
    expect(created!.changes).toMatchObject({ id: record.id, plan: "enterprise", limits: { perMinute: 7, perDay: 70 }, kid: record.kid, revokedAt: null });
    expect(created!.changes).not.toHaveProperty("lastUsedAt");
    expect(JSON.stringify(created)).not.toContain(token.split(".")[2]);
  });

  it("create refuses bad input naming every field, and writes nothing", async () => {
    const { ops } = setup();
    expect(
      await details(ops.create({ name: "x\u0000", plan: "pro", perMinute: 5, scopes: ["pets:delete"], allowedCidrs: ["10.0.0.0/33"], expiresAt: T0 - 1, metadata: [] as never }, "cli")),
    ).toEqual([
      { field: "name", message: expect.any(String) },
      { field: "perMinute", message: expect.stringMatching(/enterprise keys only/) },
      { field: "scopes", message: expect.any(String) },
      { field: "allowedCidrs.0", message: expect.any(String) },
      { field: "metadata", message: expect.any(String) },
      { field: "expiresAt", message: "must be in the future" },
    ]);
    expect(await details(ops.create({ plan: "enterprise", perMinute: 10 }, "cli"))).toEqual([{ field: "perDay", message: "is required for the enterprise plan" }]);
    expect(await details(ops.create({ plan: "enterprise", perMinute: 10, perDay: 5 }, "cli"))).toEqual([{ field: "perDay", message: "must be at least perMinute (10)" }]);
    expect(await registry().lastSeq()).toBe(0);
  });

  it("create with an Idempotency-Key: the same request answers the same body again; another body is refused", async () => {
    const { ops } = setup();
    const idem = { tokenId: "adm_1", key: "k-1", requestHash: "h1" };
    const first = await ops.create({ name: "A", plan: "free" }, "ops", idem);
    const again = await ops.create({ name: "A", plan: "free" }, "ops", idem);
    expect(again).toMatchObject({ replayed: true, token: first.token, body: first.body });
    expect(again.record.id).toBe(first.record.id);
    await expect(ops.create({ name: "B", plan: "free" }, "ops", { ...idem, requestHash: "h2" })).rejects.toBeInstanceOf(IdempotencyKeyReusedError);
    const concurrent = await Promise.all([1, 2, 3].map(() => ops.create({ plan: "pro" }, "ops", { tokenId: "adm_1", key: "k-2", requestHash: "h3" })));
    expect(new Set(concurrent.map((c) => c.record.id)).size).toBe(1);
    expect((await registry().events(0, 100)).filter((e) => e.type === "key.created")).toHaveLength(2);
  });

  it("update is a JSON Merge Patch: left out kept, null clears, metadata merged; the event carries only what changed", async () => {
    const { ops, clock } = setup();
    const { record } = await ops.create({ name: "A", plan: "enterprise", perMinute: 5, perDay: 50, ownerId: "u1", metadata: { a: 1, b: { c: 2 } }, allowedCidrs: ["10.0.0.0/8"], scopes: ["pets:read"] }, "cli");
    clock.advance(1000);
    const patched = await ops.update(record.id, { perMinute: 6, metadata: { b: { c: null, d: 3 }, e: 4 } }, "ops");
    expect(patched).toMatchObject({ name: "A", plan: "enterprise", limits: { perMinute: 6, perDay: 50 }, ownerId: "u1", metadata: { a: 1, b: { d: 3 }, e: 4 } });
    const cleared = await ops.update(record.id, { ownerId: null, metadata: null, allowedCidrs: null, scopes: null, plan: "pro" }, "ops");
    expect(cleared).toMatchObject({ ownerId: null, metadata: {}, allowedCidrs: [], scopes: ["pets:read", "pets:write"], plan: "pro", limits: { perMinute: 300, perDay: 10_000 } });
    const events = (await registry().events(0, 10)).slice(1);
    expect(events.map((e) => [e.type, e.actor, e.changes])).toEqual([
      ["key.updated", "ops", { metadata: { a: 1, b: { d: 3 }, e: 4 }, limits: { perMinute: 6, perDay: 50 } }],
      [
        "key.updated",
        "ops",
        { ownerId: null, metadata: {}, plan: "pro", limits: { perMinute: 300, perDay: 10_000 }, scopes: ["pets:read", "pets:write"], allowedCidrs: [] },
      ],
    ]);
    // Nothing changed: no event.
    await ops.update(record.id, { name: "A" }, "ops");
    expect(await registry().lastSeq()).toBe(3);
    expect(await details(ops.update(record.id, { perMinute: 5, bogus: 1 } as never, "ops"))).toEqual([
      { field: "bogus", message: "is not a known field" },
      { field: "perMinute", message: expect.stringMatching(/enterprise keys only/) },
    ]);
    expect(await details(ops.update(record.id, { plan: "enterprise", perMinute: 9 }, "ops"))).toEqual([{ field: "perDay", message: "is required for the enterprise plan" }]);
    await expect(ops.update("key_nope", { name: "x" }, "ops")).rejects.toBeInstanceOf(KeyNotFoundError);
  });

  it("roll: a new generation signed with gen, the old one's grace in the record and the event; revoke once; a revoked key cannot change", async () => {
    const { ops, clock } = setup();
    const { record } = await ops.create({ plan: "business", expiresAt: T0 + 86_400_000 }, "cli");
    clock.advance(5000);
    const rolled = await ops.roll(record.id, 60, "cli");
    expect(rolled.record).toMatchObject({ generation: 1, graceUntil: { "0": T0 + 65_000 }, plan: "business" });
    expect(tokenPayload(rolled.token)).toMatchObject({ sub: record.id, gen: 1, plan: "business", exp: (T0 + 86_400_000) / 1000 });
    const rollEvent = (await registry().events(1, 1))[0]!;
    expect(rollEvent).toMatchObject({ type: "key.rolled", changes: { generation: 1, graceUntil: { "0": new Date(T0 + 65_000).toISOString() } } });
    expect(await details(ops.roll(record.id, -1, "cli"))).toEqual([{ field: "graceSeconds", message: expect.any(String) }]);

    const revoked = await ops.revoke(record.id, "cli");
    expect(revoked.revokedAt).toBe(T0 + 5000);
    clock.advance(1000);
    expect((await ops.revoke(record.id, "cli")).revokedAt).toBe(T0 + 5000);
    expect((await registry().events(0, 10)).map((e) => e.type)).toEqual(["key.created", "key.rolled", "key.revoked"]);
    expect((await registry().events(2, 1))[0]!.changes).toEqual({ revokedAt: new Date(T0 + 5000).toISOString() });
    await expect(ops.update(record.id, { name: "x" }, "cli")).rejects.toBeInstanceOf(KeyConflictError);
    await expect(ops.roll(record.id, 0, "cli")).rejects.toBeInstanceOf(KeyConflictError);
  });

  it("an expired key cannot be rolled; list filters by state at the clock's time", async () => {
    const { ops, clock } = setup();
    const { record } = await ops.create({ plan: "free", expiresAt: T0 + 1000 }, "cli");
    const other = await ops.create({ plan: "pro", ownerId: "u2" }, "cli");
    clock.advance(1000);
    await expect(ops.roll(record.id, 0, "cli")).rejects.toThrow(/has expired/);
    expect((await ops.list({ state: "expired" }, 10)).items.map((k) => k.id)).toEqual([record.id]);
    expect((await ops.list({ state: "active" }, 10)).items.map((k) => k.id)).toEqual([other.record.id]);
    expect((await ops.list({ ownerId: "u2" }, 10)).items.map((k) => k.id)).toEqual([other.record.id]);
  });
});

describe("key fields", () => {
  it("CIDRs: IPv4 and IPv6 networks and single hosts, each once; scopes in one order; an ISO expiry", async () => {
    const { ops } = setup();
    const { record } = await ops.create(
      { plan: "free", allowedCidrs: ["203.0.113.0/24", "2001:db8::/32", "198.51.100.7", "203.0.113.0/24"], scopes: ["pets:write", "pets:read", "pets:write"], expiresAt: "2030-02-01T00:00:00Z" },
      "cli",
    );
    expect(record).toMatchObject({ allowedCidrs: ["203.0.113.0/24", "2001:db8::/32", "198.51.100.7"], scopes: ["pets:read", "pets:write"], expiresAt: Date.UTC(2030, 1, 1) });
    expect(await details(ops.create({ plan: "free", allowedCidrs: ["10.0.0.0/8", "::ffff:not"] }, "cli"))).toEqual([{ field: "allowedCidrs.1", message: expect.any(String) }]);
    expect(await details(ops.create({ plan: "free", scopes: [] }, "cli"))).toEqual([{ field: "scopes", message: expect.any(String) }]);
  });

  it("metadata: a member named __proto__ stays a member; larger than 4 KiB is refused", async () => {
    const { ops } = setup();
    const { record } = await ops.create({ plan: "free", metadata: { a: 1 } }, "cli");
    const patched = await ops.update(record.id, { metadata: JSON.parse('{"__proto__": {"polluted": true}}') }, "cli");
    expect(Object.getPrototypeOf(patched.metadata)).toBe(Object.prototype);
    expect(JSON.stringify((await ops.get(record.id)).metadata)).toBe('{"a":1,"__proto__":{"polluted":true}}');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(await details(ops.update(record.id, { metadata: { big: "x".repeat(5000) } }, "cli"))).toEqual([{ field: "metadata", message: expect.stringMatching(/4096 bytes/) }]);
  });
});

describe("key operations, two writers on one registry", () => {
  it("concurrent rolls and patches lose nothing: each roll a generation of its own, each patch applied", async () => {
    const { ops } = setup();
    const other = createKeyOperations({ registry: registry(), keysDir: keysDir(), clock: () => T0 });
    const { record } = await ops.create({ plan: "pro", metadata: {} }, "cli");
    const rolls = await Promise.all([ops, other, ops, other].map((o) => o.roll(record.id, 60, "cli")));
    expect(rolls.map((r) => r.record.generation).sort()).toEqual([1, 2, 3, 4]);
    await Promise.all(["a", "b", "c"].map((k, i) => (i % 2 ? ops : other).update(record.id, { metadata: { [k]: i } }, "ops")));
    expect((await ops.get(record.id)).metadata).toEqual({ a: 0, b: 1, c: 2 });
  });
});
