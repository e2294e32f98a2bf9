/**
 * The gateway's verification keys from the key service's JWKS (RFC 7517: EC P-256 keys, `kid`,
 * `alg` ES256). A rotation (new kid) or a retirement (kid gone) reaches a running gateway at the
 * next fetch (key-service-feed.ts: every 60 s and whenever an event names an unknown kid).
 */
import { createPublicKey, type KeyObject } from "node:crypto";
import { KEY_ALGORITHM, KEY_ID_PATTERN, type KeyLookup } from "../../lib/api-key-format.ts";

export interface PublicKeySet extends KeyLookup {
  /** The same object across replacements while a kid's key is unchanged (the verifier's cache checks identity). */
  get(kid: string): KeyObject | undefined;
  has(kid: string): boolean;
  kids(): string[];
  /** Takes a fetched JWKS document; throws (keeping the keys held) when it is not one. */
  replace(jwks: unknown): void;
}

/** The usable keys of a JWKS document: EC P-256 signature keys with a kid; others verify nothing. */
export function parseJwks(jwks: unknown): Map<string, KeyObject> {
  const list = (jwks as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(list)) throw new Error("not a JWKS document (no keys array)");
  const keys = new Map<string, KeyObject>();
  for (const jwk of list as Record<string, unknown>[]) {
    if (typeof jwk !== "object" || jwk === null) continue;
    const { kid, kty, crv, alg, use, x, y } = jwk;
    if (typeof kid !== "string" || !KEY_ID_PATTERN.test(kid) || kty !== "EC" || crv !== "P-256") continue;
    if ((alg !== undefined && alg !== KEY_ALGORITHM) || (use !== undefined && use !== "sig")) continue;
    if (typeof x !== "string" || typeof y !== "string") continue;
    try {
      keys.set(kid, createPublicKey({ key: { kty, crv, x, y }, format: "jwk" }));
    } catch {
      // Bad coordinates: it verifies nothing.
    }
  }
  return keys;
}

export function createPublicKeySet(): PublicKeySet {
  let keys = new Map<string, KeyObject>();
  return {
    get: (kid) => keys.get(kid),
    has: (kid) => keys.has(kid),
    kids: () => [...keys.keys()],
    replace(jwks) {
      const fresh = parseJwks(jwks);
      for (const [kid, key] of fresh) {
        const known = keys.get(kid);
        if (known?.equals(key)) fresh.set(kid, known);
      }
      keys = fresh;
    },
  };
}
