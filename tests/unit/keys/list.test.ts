import { describe, expect, it } from "vitest";
import { issueKey } from "../../../keys/issue.ts";
import { ensureKeyPair } from "../../../keys/key-pairs.ts";
import { formatKeyTable, formatTable, listKeys } from "../../../keys/list.ts";
import { addRevocation } from "../../../keys/registry.ts";
import { tokenPayload, useTempKeysDir } from "../../../testkit/keys.ts";

const keysDir = useTempKeysDir();
const NOW = Date.UTC(2030, 0, 1);

describe("listKeys", () => {
  it("shows plan, limits, expiry and revocation, never the token", () => {
    const { kid } = ensureKeyPair(keysDir());
    const a = issueKey(keysDir(), { plan: "enterprise", perMinute: 9, perDay: 99, expiresInSeconds: 60, name: "Acme", now: NOW });
    const b = issueKey(keysDir(), { plan: "free", now: NOW });
    addRevocation(keysDir(), String(tokenPayload(b).sub), null, NOW / 1000 + 5);
    const keys = listKeys(keysDir(), { nowMs: NOW + 60_000 });
    expect(keys).toEqual([
      {
        keyId: tokenPayload(a).sub,
        name: "Acme",
        plan: "enterprise",
        perMinute: 9,
        perDay: 99,
        kid,
        createdAt: "2030-01-01T00:00:00Z",
        expiresAt: "2030-01-01T00:01:00Z",
        expired: true,
        revokedAt: null,
        planChangedAt: null,
        rolls: 0,
        rolledAt: null,
        lastUsedAt: null,
      },
      {
        keyId: tokenPayload(b).sub,
        name: "",
        plan: "free",
        perMinute: null,
        perDay: null,
        kid,
        createdAt: "2030-01-01T00:00:00Z",
        expiresAt: null,
        expired: false,
        revokedAt: "2030-01-01T00:00:05Z",
        planChangedAt: null,
        rolls: 0,
        rolledAt: null,
        lastUsedAt: null,
      },
    ]);
    const table = formatKeyTable(keys);
    expect(table.split("\n")[0]).toMatch(/^ID +NAME +PLAN +LIMITS +SIGNED BY +CREATED +EXPIRES +REVOKED +ROLLED +LAST USED$/);
    expect(table).toContain("9/min 99/day");
    expect(table).toContain("2030-01-01T00:01:00Z (expired)");
    for (const token of [a, b]) expect(table).not.toContain(token.split(".")[2]);
  });

  it("is empty before any key is issued", () => {
    expect(listKeys(keysDir())).toEqual([]);
  });
});

describe("formatTable", () => {
  it("aligns columns and trims trailing space", () => {
    expect(formatTable(["A", "BB"], [["xxx", "y"], ["z", ""]])).toBe("A    BB\nxxx  y\nz\n");
  });
});
