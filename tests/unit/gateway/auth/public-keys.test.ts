import { generateKeyPairSync } from "node:crypto";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadPublicKeys, publicKeyDir, publicKeyPath, watchPublicKeys } from "../../../../gateway/auth/public-keys.js";
import { ensureKeyPair, rotateKeyPair } from "../../../../keys/key-pairs.js";
import { useTempKeysDir } from "../../../helpers/keys.js";

const keysDir = useTempKeysDir();
const pem = (type: "ec" | "rsa" | "ed25519") => {
  const { publicKey } =
    type === "ec"
      ? generateKeyPairSync("ec", { namedCurve: "P-384" })
      : type === "rsa"
        ? generateKeyPairSync("rsa", { modulusLength: 2048 })
        : generateKeyPairSync("ed25519");
  return publicKey.export({ format: "pem", type: "spki" });
};

describe("loadPublicKeys", () => {
  it("is empty when KEYS_DIR or its public/ directory does not exist", () => {
    expect(loadPublicKeys(path.join(keysDir(), "nope")).size).toBe(0);
    expect(loadPublicKeys(keysDir()).size).toBe(0);
  });

  it("loads every pair's public key by kid", () => {
    const { kid: a } = ensureKeyPair(keysDir());
    const { kid: b } = rotateKeyPair(keysDir());
    expect([...loadPublicKeys(keysDir()).keys()].sort()).toEqual([a, b].sort());
  });

  it("skips files that are not P-256 public keys or not named <kid>.pem", () => {
    const { kid } = ensureKeyPair(keysDir());
    const dir = publicKeyDir(keysDir());
    writeFileSync(path.join(dir, "p384.pem"), pem("ec"));
    writeFileSync(path.join(dir, "rsa.pem"), pem("rsa"));
    writeFileSync(path.join(dir, "ed.pem"), pem("ed25519"));
    writeFileSync(path.join(dir, "junk.pem"), "not a key");
    writeFileSync(path.join(dir, "notes.txt"), "hello");
    writeFileSync(path.join(dir, "bad name.pem"), pem("ec"));
    mkdirSync(path.join(dir, "sub.pem"));
    expect([...loadPublicKeys(keysDir()).keys()]).toEqual([kid]);
  });
});

describe("watchPublicKeys", () => {
  it("picks up added and removed keys on reload, keeping unchanged key objects", () => {
    const { kid: a } = ensureKeyPair(keysDir());
    const keys = watchPublicKeys({ keysDir: keysDir(), reloadMs: 60_000 });
    try {
      const first = keys.get(a);
      const { kid: b } = rotateKeyPair(keysDir());
      expect(keys.has(b)).toBe(false);
      keys.reload();
      expect(keys.kids().sort()).toEqual([a, b].sort());
      expect(keys.get(a)).toBe(first);
      rmSync(publicKeyPath(keysDir(), a));
      keys.reload();
      expect(keys.kids()).toEqual([b]);
    } finally {
      keys.close();
    }
  });

  it("reloads on its own timer", async () => {
    const keys = watchPublicKeys({ keysDir: keysDir(), reloadMs: 20 });
    try {
      const { kid } = ensureKeyPair(keysDir());
      await expect.poll(() => keys.has(kid), { timeout: 2000, interval: 10 }).toBe(true);
    } finally {
      keys.close();
    }
  });
});
