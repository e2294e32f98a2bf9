import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { issuedFilePath, loadPublicKeys, revokedFilePath, verifyTokenSignature } from "../../../lib/api-key-format.ts";
import { keyChangesFilePath } from "../../../lib/key-changes.ts";
import { importKeysDir } from "../../../keys/import.ts";
import { issueKey } from "../../../keys/issue.ts";
import { loadSigningKey } from "../../../keys/key-pairs.ts";
import { tokenPayload, useKeyRegistry, useTempKeysDir } from "../../../testkit/keys.ts";

const keysDir = useTempKeysDir();
const registry = useKeyRegistry(keysDir);
const T0 = Date.UTC(2030, 0, 1);
const S0 = T0 / 1000;

/** A KEYS_DIR record as the file-era tooling wrote it: a token signed here and its issued.jsonl line. */
function fileEraKey(plan: "pro" | "enterprise", expiresAt: number | null = null): { token: string; id: string } {
  const token = issueKey(keysDir(), plan === "enterprise" ? { plan, perMinute: 5, perDay: 50, now: T0 } : { plan, now: T0 });
  const id = String(tokenPayload(token).sub);
  const line = { keyId: id, name: `n-${id}`, plan, ...(plan === "enterprise" && { perMinute: 5, perDay: 50 }), kid: loadSigningKey(keysDir()).kid, createdAt: S0, expiresAt };
  appendFileSync(issuedFilePath(keysDir()), `${JSON.stringify(line)}\n`);
  return { token, id };
}

const writeJson = (file: string, value: unknown) => writeFileSync(file, JSON.stringify(value));

describe("importKeysDir", () => {
  it("creates each key as the files describe it (plan in force, rolls, revocation) with actor cli; again: nothing changes", async () => {
    const a = fileEraKey("pro", S0 + 86_400);
    const b = fileEraKey("enterprise");
    const c = fileEraKey("pro");
    writeJson(revokedFilePath(keysDir()), { revoked: { [c.id]: { revokedAt: S0 + 5, expiresAt: null }, key_unknown: { revokedAt: S0, expiresAt: null } } });
    writeJson(keyChangesFilePath(keysDir()), {
      keys: { [a.id]: { plan: "business", perMinute: 1000, perDay: 100000, planChangedAt: S0 + 1, generation: 2, graceUntil: { "0": S0 + 10, "1": S0 + 20 }, rolledAt: S0 + 2 } },
    });
    expect(await importKeysDir(registry(), keysDir(), T0 + 100_000)).toEqual({ created: 3, updated: 0, unchanged: 0, skipped: 1 });
    expect(await registry().getKey(a.id)).toMatchObject({
      name: `n-${a.id}`,
      plan: "business",
      limits: { perMinute: 1000, perDay: 100_000 },
      generation: 2,
      graceUntil: { "0": T0 + 10_000, "1": T0 + 20_000 },
      createdAt: T0,
      expiresAt: T0 + 86_400_000,
      revokedAt: null,
      scopes: ["pets:read", "pets:write"],
      kid: loadSigningKey(keysDir()).kid,
    });
    expect(await registry().getKey(b.id)).toMatchObject({ plan: "enterprise", limits: { perMinute: 5, perDay: 50 }, generation: 0 });
    expect(await registry().getKey(c.id)).toMatchObject({ revokedAt: T0 + 5000 });
    const events = await registry().events(0, 100);
    expect(events.map((e) => [e.type, e.actor, e.keyId])).toEqual([a, b, c].map((k) => ["key.created", "cli", k.id]));
    // Gateways learn a key from its events alone: a key rolled in the file era carries its grace ends.
    expect(events[0]!.changes).toMatchObject({ generation: 2, graceUntil: { "0": new Date(T0 + 10_000).toISOString(), "1": new Date(T0 + 20_000).toISOString() } });
    expect(events[1]!.changes).not.toHaveProperty("graceUntil");
    // The tokens issued before still verify as the same key, signing pair and generation.
    expect(verifyTokenSignature(b.token, loadPublicKeys(keysDir()), S0).apiKey).toMatchObject({ keyId: b.id, generation: 0 });

    expect(await importKeysDir(registry(), keysDir(), T0 + 200_000)).toEqual({ created: 0, updated: 0, unchanged: 3, skipped: 1 });
    expect(await registry().lastSeq()).toBe(3);
  });

  it("a key already imported: a revocation, a later roll or plan change in the files is applied once; older changes are not", async () => {
    const a = fileEraKey("pro");
    await importKeysDir(registry(), keysDir(), T0 + 100_000);
    // The files change afterwards (an operator on an older checkout): a roll, a plan change, a revocation.
    writeJson(keyChangesFilePath(keysDir()), {
      keys: { [a.id]: { plan: "free", perMinute: 60, perDay: 1000, planChangedAt: S0 + 200, generation: 1, graceUntil: { "0": S0 + 300 }, rolledAt: S0 + 200 } },
    });
    writeJson(revokedFilePath(keysDir()), { revoked: { [a.id]: { revokedAt: S0 + 250, expiresAt: null } } });
    expect(await importKeysDir(registry(), keysDir(), T0 + 400_000)).toEqual({ created: 0, updated: 1, unchanged: 0, skipped: 0 });
    expect(await registry().getKey(a.id)).toMatchObject({ plan: "free", generation: 1, graceUntil: { "0": T0 + 300_000 }, revokedAt: T0 + 250_000 });
    expect((await registry().events(1, 10)).map((e) => e.type)).toEqual(["key.updated", "key.rolled", "key.revoked"]);
    expect(await importKeysDir(registry(), keysDir(), T0 + 500_000)).toMatchObject({ updated: 0, unchanged: 1 });
    expect(await registry().lastSeq()).toBe(4);
  });

  it("an empty or missing folder imports nothing; a corrupt file is named", async () => {
    const empty = path.join(keysDir(), "empty");
    mkdirSync(empty);
    expect(await importKeysDir(registry(), empty, T0)).toEqual({ created: 0, updated: 0, unchanged: 0, skipped: 0 });
    writeFileSync(keyChangesFilePath(empty), "{oops");
    await expect(importKeysDir(registry(), empty, T0)).rejects.toThrowError(/key-changes\.json is not a valid key change record/);
  });
});
