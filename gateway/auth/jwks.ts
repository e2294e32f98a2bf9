/**
 * The gateway's verification keys from the key service's JWKS (RFC 7517: EC P-256 keys, `kid`,
 * `alg` ES256). A rotation (new kid) or a retirement (kid gone) reaches a running gateway at the
 * next fetch (key-service-feed.ts: every 60 s and whenever an event names an unknown kid).
 */
import type { KeyObject } from "node:crypto";
import type { KeyLookup } from "../../lib/api-key-format.ts";
import { parseJwks } from "../../lib/jwks.ts";

export interface PublicKeySet extends KeyLookup {
  /** The same object across replacements while a kid's key is unchanged (the verifier's cache checks identity). */
  get(kid: string): KeyObject | undefined;
  has(kid: string): boolean;
  kids(): string[];
  /** Takes a fetched JWKS document; throws (keeping the keys held) when it is not one. */
  replace(jwks: unknown): void;
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
