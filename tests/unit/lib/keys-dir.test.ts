import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_KEYS_DIR, defaultKeysDir, legacyKeysDirNotice } from "../../../lib/keys-dir.ts";

describe("the default KEYS_DIR", () => {
  const dirs: string[] = [];
  const checkout = (...made: string[]) => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "petstore-keysdir-"));
    dirs.push(dir);
    for (const d of made) mkdirSync(path.join(dir, d), { recursive: true });
    return dir;
  };
  afterEach(() => {
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it("is data/keys, out of the source tree, in a new checkout", () => {
    expect(DEFAULT_KEYS_DIR).toBe("data/keys");
    expect(defaultKeysDir(checkout())).toBe("data/keys");
    expect(defaultKeysDir(checkout("keys"))).toBe("data/keys");
  });

  it("is keys/ while an older checkout's signing keys are there and data/keys is not, with a line saying how to move them", () => {
    expect(defaultKeysDir(checkout("keys/private"))).toBe("keys");
    const notice = legacyKeysDirNotice("keys", {});
    expect(notice).toMatch(/^KEYS_DIR: using keys\/ of an older checkout; .* mkdir -p data\/keys && mv keys\/private keys\/public .* data\/keys\//);
    expect(notice).not.toContain("\n");
  });

  it("is data/keys once it exists, whatever keys/ holds; a KEYS_DIR the operator set is never remarked on", () => {
    expect(defaultKeysDir(checkout("keys/private", "data/keys"))).toBe("data/keys");
    expect(legacyKeysDirNotice("keys", { KEYS_DIR: "keys" })).toBeUndefined();
    expect(legacyKeysDirNotice("data/keys", {})).toBeUndefined();
  });
});
