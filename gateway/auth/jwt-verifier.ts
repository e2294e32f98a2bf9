import { AuthError, isExpired, verifyTokenSignature, type ApiKey, type KeyLookup, type VerifiedToken } from "../../lib/api-key-format.ts";
import type { Clock } from "../../lib/clock.ts";
import { rolledAway, type KeyStateView } from "./key-state.ts";

export { parseBearer } from "./bearer.ts";

/** Verifies a bearer token; throws AuthError. Synchronous so a cache hit costs no tick. */
export interface KeyVerifier {
  verify(token: string): ApiKey;
}

export interface KeyVerifierOptions {
  /** The key service's public keys (jwks.ts). */
  publicKeys: KeyLookup;
  /** What the key service's feed said of each key (key-state.ts). */
  keys: KeyStateView;
  /** Milliseconds since the epoch. */
  clock: Clock;
  /** Verified tokens kept (LRU); default 10,000. */
  cacheSize?: number;
}

export interface CachingKeyVerifier extends KeyVerifier {
  /** Tokens currently cached (for tests and metrics). */
  cached(): number;
}

/** The 401 message of a key replaced by a roll once its grace period is over. */
export const ROLLED = "This API key was rolled: use the key that replaced it.";

/**
 * The gateway's verifier. A verified token is cached (bounded LRU keyed by the token string),
 * so a hit costs a Map lookup; every hit still checks, against the clock and the key's state,
 * expiry (the registry's when it has one, else the token's), revocation, that the signing key
 * has not been retired or replaced, and that the key was not rolled away.
 */
export function createKeyVerifier(opts: KeyVerifierOptions): CachingKeyVerifier {
  const maxEntries = Math.max(1, opts.cacheSize ?? 10_000);
  const cache = new Map<string, VerifiedToken>();

  return {
    verify(token) {
      const nowMs = opts.clock();
      const now = Math.floor(nowMs / 1000);
      let entry = cache.get(token);
      cache.delete(token);
      if (!entry || opts.publicKeys.get(entry.kid) !== entry.key) entry = verifyTokenSignature(token, opts.publicKeys, now);
      const { apiKey } = entry;
      const state = opts.keys.get(apiKey.keyId);
      const expired = state?.expiresAt !== undefined ? state.expiresAt !== null && nowMs >= state.expiresAt : isExpired(apiKey, now);
      if (expired) throw new AuthError("expired", "API key expired");
      if (state?.revokedAt != null) throw new AuthError("revoked", "API key revoked");
      if (state && rolledAway(state, apiKey.generation, nowMs)) throw new AuthError("rolled", ROLLED);
      cache.set(token, entry);
      if (cache.size > maxEntries) cache.delete(cache.keys().next().value!);
      return apiKey;
    },
    cached: () => cache.size,
  };
}
