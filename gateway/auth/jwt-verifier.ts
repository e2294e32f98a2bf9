import { AuthError, isExpired, verifyTokenSignature, type ApiKey, type VerifiedToken } from "../../lib/api-key-format.ts";
import { watchPublicKeys } from "./public-keys.ts";
import type { RevocationList } from "./revocation-list.ts";
import { isRolledAway } from "../../lib/key-changes.ts";
import { NO_KEY_CHANGES, type KeyChangeList } from "./key-changes.ts";
import type { Clock } from "../../lib/clock.ts";

export { parseBearer } from "./bearer.ts";

/** Verifies a bearer token; throws AuthError. Synchronous so a cache hit costs no tick. */
export interface KeyVerifier {
  verify(token: string): ApiKey;
  close(): void;
}

export interface KeyVerifierOptions {
  keysDir: string;
  /** Milliseconds since the epoch. */
  clock: Clock;
  revocations: RevocationList;
  /** Rolls recorded in KEYS_DIR: a replaced key stops when its grace period ends (default none). */
  keyChanges?: KeyChangeList;
  /** Verified tokens kept (LRU); default 10,000. */
  cacheSize?: number;
  /** How often KEYS_DIR/public is re-read; default 5,000 ms. */
  reloadMs?: number;
}

export interface CachingKeyVerifier extends KeyVerifier {
  /** Tokens currently cached (for tests and metrics). */
  cached(): number;
}

/** The 401 message of a key replaced by `keys roll` once its grace period is over. */
export const ROLLED = "This API key was rolled: use the key that replaced it.";

/**
 * The gateway's verifier. A verified token is cached (bounded LRU keyed by the token string),
 * so a hit costs a Map lookup; every hit still checks expiry against the clock, revocation,
 * that the signing key has not been retired or replaced, and that
 * the key was not rolled away. `close()` stops the key reload timer; the
 * revocation list belongs to the caller.
 */
export function createKeyVerifier(opts: KeyVerifierOptions): CachingKeyVerifier {
  const keys = watchPublicKeys({ keysDir: opts.keysDir, reloadMs: opts.reloadMs });
  const maxEntries = Math.max(1, opts.cacheSize ?? 10_000);
  const cache = new Map<string, VerifiedToken>();
  const keyChanges = opts.keyChanges ?? NO_KEY_CHANGES;

  return {
    verify(token) {
      const now = Math.floor(opts.clock() / 1000);
      let entry = cache.get(token);
      cache.delete(token);
      if (!entry || keys.get(entry.kid) !== entry.key) entry = verifyTokenSignature(token, keys, now);
      if (isExpired(entry.apiKey, now)) throw new AuthError("expired", "API key expired");
      if (opts.revocations.isRevoked(entry.apiKey.keyId)) throw new AuthError("revoked", "API key revoked");
      if (isRolledAway(keyChanges.get(entry.apiKey.keyId), entry.apiKey.generation, now)) throw new AuthError("rolled", ROLLED);
      cache.set(token, entry);
      if (cache.size > maxEntries) cache.delete(cache.keys().next().value!);
      return entry.apiKey;
    },
    cached: () => cache.size,
    close: () => keys.close(),
  };
}
