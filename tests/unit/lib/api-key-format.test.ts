import { execFileSync } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadPublicKeys, publicKeyDir } from "../../../lib/api-key-format.ts";
import { ensureKeyPair, rotateKeyPair } from "../../../keys/key-pairs.ts";
import { useTempKeysDir } from "../../../testkit/keys.ts";

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

describe("one home for the API-key format and the Redis connection", () => {
  const ROOT = path.resolve(import.meta.dirname, "../../..");
  const importsIn = (dir: string, pattern: string): string[] => {
    try {
      return execFileSync("grep", ["-rlE", pattern, dir, "--include=*.ts"], { cwd: ROOT, encoding: "utf8" }).trim().split("\n");
    } catch {
      return []; // grep exits 1 when nothing matches
    }
  };

  it("keys/ imports nothing from gateway/", () => {
    expect(importsIn("keys", `from "\\.\\./gateway/`)).toEqual([]);
  });

  it("nothing outside lib/ declares the key format's constants or builds a Redis client", () => {
    // Benchmarks and tests open their own admin connections; the shipped code has one factory.
    const pattern = "export const (KEY_ISSUER|KEY_AUDIENCE|KEY_ALGORITHM|KEY_ID_PATTERN|PLAN_NAMES)|new (Redis|Cluster)\\(";
    const found = ["gateway", "keys", "pet-service", "scripts", "lib"].flatMap((dir) => importsIn(dir, pattern));
    expect(found.sort()).toEqual(["lib/api-key-format.ts", "lib/redis-client.ts"]);
  });
});
