import { describe, expect, it } from "vitest";
import { formatKeyTable, formatTable, listKeys } from "../../../keys/list.ts";
import { createKeyOperations } from "../../../keys/operations/index.ts";
import { allKeys } from "../../../keys/resolve.ts";
import { fakeClock } from "../../../testkit/fake-clock.ts";
import { useKeyRegistry, useTempKeysDir } from "../../../testkit/keys.ts";

const keysDir = useTempKeysDir();
const registry = useKeyRegistry(keysDir);
const NOW = Date.UTC(2030, 0, 1);

describe("listKeys", () => {
  it("shows plan in force and since when, limits, rolls, expiry, revocation and last use, never the token", async () => {
    const clock = fakeClock(NOW);
    const ops = createKeyOperations({ registry: registry(), keysDir: keysDir(), clock: clock.clock });
    const a = await ops.create({ plan: "enterprise", perMinute: 9, perDay: 99, expiresAt: NOW + 60_000, name: "Acme" }, "cli");
    clock.advance(1);
    const b = await ops.create({ plan: "free" }, "cli");
    clock.advance(4999);
    await ops.update(b.record.id, { plan: "business" }, "cli");
    await ops.revoke(b.record.id, "cli");
    const rolled = await ops.roll(a.record.id, 60, "cli");
    const keys = await listKeys(registry(), await allKeys(registry(), NOW), { nowMs: NOW + 60_000, lastUses: new Map([[b.record.id, NOW + 1000]]) });
    expect(keys).toEqual([
      {
        keyId: a.record.id,
        name: "Acme",
        plan: "enterprise",
        perMinute: 9,
        perDay: 99,
        kid: a.record.kid,
        createdAt: "2030-01-01T00:00:00.000Z",
        expiresAt: "2030-01-01T00:01:00.000Z",
        expired: true,
        revokedAt: null,
        planChangedAt: null,
        rolls: 1,
        rolledAt: "2030-01-01T00:00:05.000Z",
        lastUsedAt: null,
      },
      {
        keyId: b.record.id,
        name: "",
        plan: "business",
        perMinute: null,
        perDay: null,
        kid: b.record.kid,
        createdAt: "2030-01-01T00:00:00.001Z",
        expiresAt: null,
        expired: false,
        revokedAt: "2030-01-01T00:00:05.000Z",
        planChangedAt: "2030-01-01T00:00:05.000Z",
        rolls: 0,
        rolledAt: null,
        lastUsedAt: "2030-01-01T00:00:01.000Z",
      },
    ]);
    const table = formatKeyTable(keys);
    expect(table.split("\n")[0]).toMatch(/^ID +NAME +PLAN +LIMITS +SIGNED BY +CREATED +EXPIRES +REVOKED +ROLLED +LAST USED$/);
    expect(table).toContain("9/min 99/day");
    expect(table).toContain("2030-01-01T00:01:00.000Z (expired)");
    expect(table).toContain("business (since 2030-01-01T00:00:05.000Z)");
    for (const token of [a.token, b.token, rolled.token]) expect(table).not.toContain(token.split(".")[2]);
  });

  it("is empty before any key is created", async () => {
    expect(await listKeys(registry(), [], { nowMs: NOW })).toEqual([]);
  });
});

describe("formatTable", () => {
  it("aligns columns and trims trailing space", () => {
    expect(formatTable(["A", "BB"], [["xxx", "y"], ["z", ""]])).toBe("A    BB\nxxx  y\nz\n");
  });
});
