import jwt from "jsonwebtoken";
import { AuthError, loadPublicKeys, revokedFilePath, verifyTokenSignature } from "../lib/api-key-format.ts";
import { withoutPasswords } from "../lib/redact-url.ts";
import { KeysError } from "./errors.ts";
import { addRevocation, findIssued, readRevoked } from "./registry.ts";
import { setRevoked, withRedis } from "./redis.ts";

export interface RevokeOptions {
  /** When set, the Redis revocation key is set too (every gateway replica refuses the key at once). */
  redisUrl?: string;
  /** Milliseconds since the epoch; defaults to now. */
  now?: number;
}

export interface RevokeResult {
  keyId: string;
  /** Unix seconds; null when the key never expires. */
  expiresAt: number | null;
  alreadyRevoked: boolean;
  /** The Redis revocation key was set. */
  redis: boolean;
}

/** Seconds past a key's expiry that its Redis revocation key outlives it. */
export const REDIS_TTL_MARGIN_SECONDS = 60;

/**
 * Revokes a key given as its token or its key id: records it in revoked.json (gateways
 * polling KEYS_DIR refuse it within about a second) and, with `redisUrl`, sets the Redis
 * revocation key. Throws KeysError for an unknown key or an unreachable Redis (the file
 * is written first, so the revocation stands either way).
 */
export async function revokeKey(keysDir: string, keyOrId: string, opts: RevokeOptions = {}): Promise<RevokeResult> {
  const nowSeconds = Math.floor((opts.now ?? Date.now()) / 1000);
  const { keyId, expiresAt } = resolveKey(keysDir, keyOrId.trim(), nowSeconds);
  const alreadyRevoked = addRevocation(keysDir, keyId, expiresAt, nowSeconds);
  if (opts.redisUrl) {
    const ttl = expiresAt === null ? null : Math.max(expiresAt - nowSeconds, 0) + REDIS_TTL_MARGIN_SECONDS;
    await withRedis(opts.redisUrl, (client) => setRevoked(client, keyId, ttl)).catch((err: Error) => {
      throw new KeysError(
        `${keyId} is revoked in ${revokedFilePath(keysDir)}, but Redis at ${withoutPasswords(opts.redisUrl!)} could not be updated ` +
          `(${err.message}); run revoke again once Redis is reachable`,
      );
    });
  }
  return { keyId, expiresAt, alreadyRevoked, redis: Boolean(opts.redisUrl) };
}

/**
 * The key id and expiry of a token or key id. A token must verify with the public keys here;
 * one whose signing pair is not here (retired) is accepted only if issued.jsonl knows its id.
 */
export function resolveKey(keysDir: string, keyOrId: string, nowSeconds: number): { keyId: string; expiresAt: number | null } {
  if (!keyOrId.includes(".")) {
    const record = findIssued(keysDir, keyOrId);
    if (record) return { keyId: record.keyId, expiresAt: record.expiresAt };
    const revoked = readRevoked(keysDir).revoked[keyOrId];
    if (revoked) return { keyId: keyOrId, expiresAt: revoked.expiresAt };
    throw new KeysError(`unknown key id ${JSON.stringify(keyOrId)}: not in the issued keys of ${keysDir}`);
  }
  const keys = loadPublicKeys(keysDir);
  try {
    const { apiKey } = verifyTokenSignature(keyOrId, keys, nowSeconds);
    return { keyId: apiKey.keyId, expiresAt: apiKey.expiresAt ?? null };
  } catch (err) {
    if (!(err instanceof AuthError)) throw err;
  }
  const decoded = jwt.decode(keyOrId, { complete: true });
  const kid = decoded?.header.kid;
  const sub = typeof decoded?.payload === "object" ? decoded.payload.sub : undefined;
  const record = sub && kid && !keys.has(kid) ? findIssued(keysDir, sub) : undefined;
  if (!record) throw new KeysError(`not a valid key issued with the signing keys in ${keysDir}`);
  return { keyId: record.keyId, expiresAt: record.expiresAt };
}
