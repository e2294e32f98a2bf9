import { createPublicKey, type KeyObject } from "node:crypto";
import { KEY_ALGORITHM, KEY_ID_PATTERN, loadPublicKeys } from "./api-key-format.ts";

/**
 * The key service's public signing keys as a JSON Web Key Set (RFC 7517), what
 * `GET /.well-known/jwks.json` serves and the key service keeps in Redis (`JWKS_REDIS_KEY`):
 * gateways verify keys with these and never see a private key.
 */
export interface Jwk {
  kty: "EC";
  crv: "P-256";
  x: string;
  y: string;
  kid: string;
  alg: typeof KEY_ALGORITHM;
  use: "sig";
}

export interface Jwks {
  keys: Jwk[];
}

/** Beside every key's Redis record, in a slot of its own: the JWKS JSON, for a gateway that starts while the key service is down. */
export const JWKS_REDIS_KEY = "rl:{keys}:jwks";

export function jwkOf(kid: string, key: KeyObject): Jwk {
  const { x, y } = key.export({ format: "jwk" });
  return { kty: "EC", crv: "P-256", x: x!, y: y!, kid, alg: KEY_ALGORITHM, use: "sig" };
}

/** Every public key in KEYS_DIR/public, by kid; a retired pair's file is gone, and so is its key here. */
export function jwksOf(keysDir: string): Jwks {
  return { keys: [...loadPublicKeys(keysDir)].map(([kid, key]) => jwkOf(kid, key)) };
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
