import { rmSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { publicKeyPath } from "../../../../lib/api-key-format.ts";
import { watchPublicKeys } from "../../../../gateway/auth/public-keys.ts";
import { ensureKeyPair, rotateKeyPair } from "../../../../keys/key-pairs.ts";
import { useTempKeysDir } from "../../../../testkit/keys.ts";

const keysDir = useTempKeysDir();

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
