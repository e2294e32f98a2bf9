import { generateKeyPairSync } from "node:crypto";
import { describe, expect, it } from "vitest";
import { KeysError } from "../../../keys/errors.ts";
import { loadSigningKey, retireKeyPair, rotateKeyPair } from "../../../keys/key-pairs.ts";
import { createKeyOperations } from "../../../keys/operations/index.ts";
import { allKeys, findKey } from "../../../keys/resolve.ts";
import { craftToken, tokenPayload, useKeyRegistry, useTempKeysDir } from "../../../testkit/keys.ts";

const keysDir = useTempKeysDir();
const registry = useKeyRegistry(keysDir);
const NOW = Date.UTC(2030, 0, 1);
const NOW_S = NOW / 1000;

const create = async (expiresAt: number | null = null) =>
  (await createKeyOperations({ registry: registry(), keysDir: keysDir(), clock: () => NOW }).create({ plan: "pro", expiresAt }, "cli")).token;
const idOf = (token: string) => String(tokenPayload(token).sub);

describe("findKey", () => {
  it("by key id, and by token (even an expired one, with blanks around it)", async () => {
    const token = await create(NOW + 1000);
    expect((await findKey(registry(), keysDir(), idOf(token), NOW_S)).id).toBe(idOf(token));
    expect((await findKey(registry(), keysDir(), ` ${token}\n`, NOW_S + 10)).id).toBe(idOf(token));
  });

  it("refuses unknown ids and tokens that are not ours", async () => {
    await expect(findKey(registry(), keysDir(), "key_0000000000000000", NOW_S)).rejects.toThrowError(/unknown key id "key_0000000000000000"/);
    const foreign = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey;
    const forged = craftToken({ alg: "ES256", kid: loadSigningKey(keysDir()).kid }, tokenPayload(await create()), { es256: foreign });
    await expect(findKey(registry(), keysDir(), forged, NOW_S)).rejects.toThrowError(KeysError);
    await expect(findKey(registry(), keysDir(), "a.b.c", NOW_S)).rejects.toThrowError(/not a valid key issued/);
  });

  it.each(["constructor", "toString", "__proto__"])("refuses the unknown id %s", async (id) => {
    await expect(findKey(registry(), keysDir(), id, NOW_S)).rejects.toThrowError(/unknown key id/);
  });

  it("accepts a token whose signing pair was retired when the registry knows its id", async () => {
    const old = await create();
    const { kid: oldKid } = loadSigningKey(keysDir());
    rotateKeyPair(keysDir());
    retireKeyPair(keysDir(), oldKid);
    expect((await findKey(registry(), keysDir(), old, NOW_S)).id).toBe(idOf(old));
  });
});

describe("allKeys", () => {
  it("walks every page, oldest first", async () => {
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push(idOf(await create()));
    expect((await allKeys(registry(), NOW)).map((k) => k.id).sort()).toEqual(ids.sort());
  });
});
