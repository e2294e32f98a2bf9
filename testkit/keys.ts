import { execFile } from "node:child_process";
import { createHmac, sign, type KeyObject } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, beforeEach } from "vitest";
import { ensureKeyPair } from "../keys/key-pairs.ts";
import { openRegistry } from "../keys/registry/open.ts";
import type { KeyRegistry } from "../keys/registry/store.ts";
import { redisKey, subjectForKey } from "../lib/redis-keys.ts";
import { startRedis, type PrivateRedis } from "./redis-server.ts";

/** A fresh, empty KEYS_DIR under the OS temp dir for each test; removed afterwards. */
export function useTempKeysDir(): () => string {
  let dir = "";
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "petstore-keys-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  return () => dir;
}

const b64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

/** How a hand-made token is signed: ES256 or RS256 with a private key, HS256 with a secret, or not at all. */
export type Signer = { es256: KeyObject } | { rs256: KeyObject } | { hs256: string | Buffer } | "none";

/** Builds a JWT by hand, so tests can forge what jsonwebtoken itself would refuse to sign. */
export function craftToken(header: Record<string, unknown>, payload: unknown, signer: Signer): string {
  const input = `${b64url(header)}.${b64url(payload)}`;
  let signature: string;
  if (signer === "none") signature = "";
  else if ("es256" in signer) {
    signature = sign("sha256", Buffer.from(input), { key: signer.es256, dsaEncoding: "ieee-p1363" }).toString("base64url");
  } else if ("rs256" in signer) {
    signature = sign("sha256", Buffer.from(input), signer.rs256).toString("base64url");
  } else {
    signature = createHmac("sha256", signer.hs256).update(input).digest("base64url");
  }
  return `${input}.${signature}`;
}

/** The decoded payload of a token (no verification). */
export const tokenPayload = (token: string): Record<string, unknown> =>
  JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString("utf8"));

/** A private redis-server for a file's tests, and a look at a key's revocation entry in it. */
export function useRevocationRedis() {
  let redis: PrivateRedis;
  let client: Redis;
  beforeAll(async () => {
    redis = await startRedis();
    client = new Redis(redis.url);
  });
  afterAll(async () => {
    client.disconnect();
    await redis.stop();
  });
  return {
    url: () => redis.url,
    /** The value and TTL (-2 absent, -1 none) of the key's revocation entry. */
    async revocation(keyId: string): Promise<{ value: string | null; ttl: number }> {
      const key = redisKey(subjectForKey(keyId), "revoked");
      return { value: await client.get(key), ttl: await client.ttl(key) };
    },
  };
}

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * `npm run keys -- ...` as a real process (tools/keys.ts on this runtime), from the repo root,
 * against `keysDir` and, unless `env` names another KEYS_DB, the registry file keysDir/keys.sqlite:
 * never the developer's or CI's Redis or registry unless `env` names one.
 */
export function runKeysCli(keysDir: string, args: readonly string[], env: Record<string, string> = {}): Promise<CliRun> {
  const { REDIS_URL: _never, KEYS_DB: _neither, ...inherited } = process.env;
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
  const own = { KEYS_DIR: keysDir, KEYS_DB: path.join(keysDir, "keys.sqlite"), ...env };
  return new Promise((resolve) => {
    execFile(process.execPath, ["tools/keys.ts", ...args], { cwd: root, env: { ...inherited, ...own } }, (err, stdout, stderr) =>
      resolve({ code: err ? Number(err.code) : 0, stdout, stderr }),
    );
  });
}

/** A signing pair in the test's KEYS_DIR and a fresh SQLite registry file in it, for each test; closed afterwards. */
export function useKeyRegistry(keysDir: () => string): () => KeyRegistry {
  let registry: KeyRegistry | undefined;
  beforeEach(async () => {
    ensureKeyPair(keysDir());
    registry = await openRegistry(path.join(keysDir(), "keys.sqlite"));
  });
  afterEach(async () => {
    await registry?.close();
    registry = undefined;
  });
  return () => registry!;
}
