import type { KeyObject } from "node:crypto";
import jwt from "jsonwebtoken";
import { z } from "zod";
import {
  AuthError,
  KEY_ALGORITHM,
  KEY_AUDIENCE,
  KEY_ID_PATTERN,
  KEY_ISSUER,
  PLAN_NAMES,
  type ApiKey,
  type KeyVerifier,
} from "../../lib/api-key-format.js";
import { watchPublicKeys } from "./public-keys.js";
import type { RevocationList } from "./revocation-list.js";

export { parseBearer } from "./bearer.js";

/** Longer bearer tokens are refused before any parsing (ours are ~350 bytes). */
export const MAX_TOKEN_LENGTH = 4096;

const positiveInt = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);
const claimsSchema = z
  .object({
    sub: z.string().regex(KEY_ID_PATTERN),
    plan: z.enum(PLAN_NAMES),
    lim: z.object({ m: positiveInt, d: positiveInt }).optional(),
    exp: positiveInt.optional(),
  })
  .refine((c) => (c.plan === "enterprise") === (c.lim !== undefined), "lim is required for enterprise keys only");

/** A token whose signature, issuer, audience and claims checked out. */
export interface VerifiedToken {
  apiKey: Readonly<ApiKey>;
  kid: string;
  /** The public key that verified it; the token stops verifying when that key is retired or replaced. */
  key: KeyObject;
}

export interface KeyLookup {
  get(kid: string): KeyObject | undefined;
}

const invalid = () => new AuthError("invalid", "invalid API key");

/**
 * Checks a token's signature (ES256 only, key chosen by the header `kid`), issuer, audience
 * and claims. Expiry and revocation are the caller's: see `isExpired`. Throws only AuthError.
 */
export function verifyTokenSignature(token: string, keys: KeyLookup, nowSeconds: number): VerifiedToken {
  if (typeof token !== "string" || token.length > MAX_TOKEN_LENGTH) throw new AuthError("malformed", "malformed API key");
  let header: jwt.JwtHeader | undefined;
  try {
    header = jwt.decode(token, { complete: true })?.header;
  } catch {
    header = undefined;
  }
  if (!header) throw new AuthError("malformed", "malformed API key");
  const key = header.alg === KEY_ALGORITHM && typeof header.kid === "string" ? keys.get(header.kid) : undefined;
  if (!key) throw invalid();

  let payload: unknown;
  try {
    payload = jwt.verify(token, key, {
      algorithms: [KEY_ALGORITHM],
      issuer: KEY_ISSUER,
      audience: KEY_AUDIENCE,
      // Expiry is checked by `isExpired`, against the same clock, for fresh and cached tokens.
      ignoreExpiration: true,
      clockTimestamp: nowSeconds,
    });
  } catch {
    throw invalid();
  }
  const claims = claimsSchema.safeParse(payload);
  if (!claims.success) throw invalid();
  const { sub, plan, lim, exp } = claims.data;
  const apiKey: ApiKey = { keyId: sub, plan };
  if (lim) Object.assign(apiKey, { perMinute: lim.m, perDay: lim.d });
  if (exp !== undefined) apiKey.expiresAt = exp;
  return { apiKey: Object.freeze(apiKey), kid: header.kid!, key };
}

export const isExpired = (apiKey: ApiKey, nowSeconds: number): boolean =>
  apiKey.expiresAt !== undefined && nowSeconds >= apiKey.expiresAt;

export interface KeyVerifierOptions {
  keysDir: string;
  /** Milliseconds since the epoch. */
  clock: () => number;
  revocations: RevocationList;
  /** Verified tokens kept (LRU); default 10,000. */
  cacheSize?: number;
  /** How often KEYS_DIR/public is re-read; default 5,000 ms. */
  reloadMs?: number;
}

export interface CachingKeyVerifier extends KeyVerifier {
  /** Tokens currently cached (for tests and metrics). */
  cached(): number;
}

/**
 * The gateway's verifier. A verified token is cached (bounded LRU keyed by the token string),
 * so a hit costs a Map lookup; every hit still checks expiry against the clock, revocation,
 * and that the signing key has not been retired or replaced. `close()` stops the key reload timer; the
 * revocation list belongs to the caller.
 */
export function createKeyVerifier(opts: KeyVerifierOptions): CachingKeyVerifier {
  const keys = watchPublicKeys({ keysDir: opts.keysDir, reloadMs: opts.reloadMs });
  const maxEntries = Math.max(1, opts.cacheSize ?? 10_000);
  const cache = new Map<string, VerifiedToken>();

  return {
    verify(token) {
      const now = Math.floor(opts.clock() / 1000);
      let entry = cache.get(token);
      cache.delete(token);
      if (!entry || keys.get(entry.kid) !== entry.key) entry = verifyTokenSignature(token, keys, now);
      if (isExpired(entry.apiKey, now)) throw new AuthError("expired", "API key expired");
      if (opts.revocations.isRevoked(entry.apiKey.keyId)) throw new AuthError("revoked", "API key revoked");
      cache.set(token, entry);
      if (cache.size > maxEntries) cache.delete(cache.keys().next().value!);
      return entry.apiKey;
    },
    cached: () => cache.size,
    close: () => keys.close(),
  };
}
