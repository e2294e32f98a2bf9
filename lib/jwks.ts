import type { KeyObject } from "node:crypto";
import { KEY_ALGORITHM, loadPublicKeys } from "./api-key-format.ts";

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
