import { rmSync, writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { revokedFilePath } from "../../../../lib/api-key-format.ts";
import { watchRevocations, type WatchedRevocations } from "../../../../gateway/auth/revocation-list.ts";
import { addRevocation } from "../../../../keys/registry.ts";
import { useTempKeysDir } from "../../../../testkit/keys.ts";

const keysDir = useTempKeysDir();
let list: WatchedRevocations | undefined;
afterEach(() => list?.close());

const watch = (pollMs = 60_000) => (list = watchRevocations({ keysDir: keysDir(), pollMs }));
const revoke = (keyId: string) => addRevocation(keysDir(), keyId, null, Math.floor(Date.now() / 1000));

describe("watchRevocations", () => {
  it("revokes nothing without revoked.json", () => {
    expect(watch().isRevoked("key_a")).toBe(false);
  });

  it("reads the file at start", () => {
    revoke("key_a");
    expect(watch().isRevoked("key_a")).toBe(true);
    expect(list!.isRevoked("key_b")).toBe(false);
  });

  it("sees a revocation within the poll interval", async () => {
    const l = watch(25);
    revoke("key_a");
    const start = Date.now();
    await expect.poll(() => l.isRevoked("key_a"), { timeout: 2000, interval: 5 }).toBe(true);
    expect(Date.now() - start).toBeLessThan(500);
  });

  it("keeps the previous list while the file is corrupt, then recovers", () => {
    revoke("key_a");
    const l = watch();
    writeFileSync(revokedFilePath(keysDir()), '{"revoked": {"key_b"');
    l.refresh();
    expect(l.isRevoked("key_a")).toBe(true);
    writeFileSync(revokedFilePath(keysDir()), JSON.stringify({ revoked: { key_b: { revokedAt: 1, expiresAt: null } } }));
    l.refresh();
    expect(l.isRevoked("key_a")).toBe(false);
    expect(l.isRevoked("key_b")).toBe(true);
  });

  it("clears the list when the file is deleted", () => {
    revoke("key_a");
    const l = watch();
    rmSync(revokedFilePath(keysDir()));
    l.refresh();
    expect(l.isRevoked("key_a")).toBe(false);
  });
});
