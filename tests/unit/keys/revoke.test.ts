import { writeFileSync } from "node:fs";
import { generateKeyPairSync } from "node:crypto";
import { beforeEach, describe, expect, it } from "vitest";
import { readRevokedFile, revokedFilePath } from "../../../lib/api-key-format.ts";
import { KeysError } from "../../../keys/errors.ts";
import { issueKey } from "../../../keys/issue.ts";
import { ensureKeyPair, loadSigningKey, retireKeyPair, rotateKeyPair } from "../../../keys/key-pairs.ts";
import { addRevocation } from "../../../keys/registry.ts";
import { revokeKey } from "../../../keys/revoke.ts";
import { freePort } from "../../../testkit/net.ts";
import { craftToken, tokenPayload, useRevocationRedis, useTempKeysDir } from "../../../testkit/keys.ts";

const keysDir = useTempKeysDir();
const NOW = Date.UTC(2030, 0, 1);
const NOW_S = NOW / 1000;
const issue = (expiresInSeconds?: number) => issueKey(keysDir(), { plan: "pro", expiresInSeconds, now: NOW });
const idOf = (token: string) => String(tokenPayload(token).sub);

beforeEach(() => {
  ensureKeyPair(keysDir());
});

describe("revokeKey (file)", () => {
  it("by key id: recorded with its expiry", async () => {
    const token = issue(3600);
    const r = await revokeKey(keysDir(), idOf(token), { now: NOW });
    expect(r).toEqual({ keyId: idOf(token), expiresAt: NOW_S + 3600, alreadyRevoked: false, redis: false });
    expect(readRevokedFile(keysDir()).revoked).toEqual({ [idOf(token)]: { revokedAt: NOW_S, expiresAt: NOW_S + 3600 } });
  });

  it("by token, even an expired one", async () => {
    const token = issue(1);
    const r = await revokeKey(keysDir(), ` ${token}\n`, { now: NOW + 10_000 });
    expect(r.keyId).toBe(idOf(token));
  });

  it("twice: idempotent, keeps the first revocation time", async () => {
    const id = idOf(issue());
    await revokeKey(keysDir(), id, { now: NOW });
    expect((await revokeKey(keysDir(), id, { now: NOW + 5000 })).alreadyRevoked).toBe(true);
    expect(readRevokedFile(keysDir()).revoked[id]).toEqual({ revokedAt: NOW_S, expiresAt: null });
  });

  it("refuses unknown ids and tokens that are not ours", async () => {
    await expect(revokeKey(keysDir(), "key_0000000000000000")).rejects.toThrowError(/unknown key id/);
    const foreign = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey;
    const forged = craftToken({ alg: "ES256", kid: loadSigningKey(keysDir()).kid }, tokenPayload(issue()), { es256: foreign });
    await expect(revokeKey(keysDir(), forged)).rejects.toThrowError(KeysError);
    await expect(revokeKey(keysDir(), "a.b.c")).rejects.toThrowError(/not a valid key issued/);
  });

  it.each(["constructor", "toString", "__proto__"])("refuses the unknown id %s (not 'already revoked' by Object.prototype)", async (id) => {
    await expect(revokeKey(keysDir(), id)).rejects.toThrowError(/unknown key id/);
  });

  it("accepts a token whose signing pair was retired when the registry knows its id", async () => {
    const old = issue();
    const { kid: oldKid } = loadSigningKey(keysDir());
    rotateKeyPair(keysDir());
    retireKeyPair(keysDir(), oldKid);
    expect((await revokeKey(keysDir(), old)).keyId).toBe(idOf(old));
  });

  it("prunes entries of keys that expired more than a day ago", async () => {
    addRevocation(keysDir(), "key_old", NOW_S - 2 * 86_400, NOW_S - 3 * 86_400);
    addRevocation(keysDir(), "key_recent", NOW_S - 3600, NOW_S - 3 * 86_400);
    addRevocation(keysDir(), "key_forever", null, NOW_S - 3 * 86_400);
    const id = idOf(issue());
    await revokeKey(keysDir(), id, { now: NOW });
    expect(Object.keys(readRevokedFile(keysDir()).revoked).sort()).toEqual([id, "key_forever", "key_recent"].sort());
  });

  it("refuses to overwrite a corrupt revocation list", async () => {
    writeFileSync(revokedFilePath(keysDir()), "{oops");
    await expect(revokeKey(keysDir(), idOf(issue()))).rejects.toThrowError(/not a valid revocation list/);
  });
});

describe("revokeKey (Redis)", () => {
  const redis = useRevocationRedis();

  it("sets the revocation key with TTL = time to expiry + 60 s", async () => {
    const id = idOf(issue(3600));
    const r = await revokeKey(keysDir(), id, { redisUrl: redis.url(), now: NOW });
    expect(r.redis).toBe(true);
    expect(await redis.revocation(id)).toEqual({ value: "1", ttl: 3660 });
  });

  it("without expiry, sets it without TTL", async () => {
    const id = idOf(issue());
    await revokeKey(keysDir(), id, { redisUrl: redis.url(), now: NOW });
    expect(await redis.revocation(id)).toEqual({ value: "1", ttl: -1 });
  });

  it("unreachable Redis: the file is written, then a clear error", async () => {
    const id = idOf(issue());
    const url = `redis://:secret@127.0.0.1:${await freePort()}`;
    const err = await revokeKey(keysDir(), id, { redisUrl: url }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(KeysError);
    expect((err as Error).message).toMatch(/revoked in .*revoked\.json, but Redis at .* could not be updated/);
    expect((err as Error).message).not.toContain("secret");
    expect(readRevokedFile(keysDir()).revoked).toHaveProperty(id);
  });
});
