import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { activeKidPath, KEY_ID_PATTERN, privateKeyDir, privateKeyPath, publicKeyDir, publicKeyPath } from "../lib/api-key-format.ts";
import { KeysError } from "./errors.ts";
import { withLock } from "./files.ts";
import { writeFileAtomic } from "../lib/write-file-atomic.ts";

/**
 * Signing key pairs in KEYS_DIR (layout in lib/api-key-format.ts): public/<kid>.pem,
 * private/<kid>.pem and private/active. kid = the first 16 characters of the key's RFC 7638 JWK
 * thumbprint.
 */

const publicOf = (key: KeyObject): KeyObject => (key.type === "public" ? key : createPublicKey(key));

export function keyThumbprint(key: KeyObject): string {
  const { crv, kty, x, y } = publicOf(key).export({ format: "jwk" });
  const canonical = JSON.stringify({ crv, kty, x, y });
  return createHash("sha256").update(canonical).digest("base64url").slice(0, 16);
}

/** The kid that signs new keys, or null before `init`. */
export function activeKid(keysDir: string): string | null {
  try {
    const kid = readFileSync(activeKidPath(keysDir), "utf8").trim();
    return KEY_ID_PATTERN.test(kid) ? kid : null;
  } catch {
    return null;
  }
}

function createKeyPair(keysDir: string): string {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const kid = keyThumbprint(publicKey);
  const privDir = privateKeyDir(keysDir);
  mkdirSync(privDir, { recursive: true, mode: 0o700 });
  chmodSync(privDir, 0o700);
  const privPath = privateKeyPath(keysDir, kid);
  writeFileSync(privPath, privateKey.export({ format: "pem", type: "pkcs8" }), { mode: 0o600, flag: "wx" });
  chmodSync(privPath, 0o600);
  writePublicKey(keysDir, kid, privateKey);
  writeFileAtomic(activeKidPath(keysDir), `${kid}\n`, 0o600);
  return kid;
}

function writePublicKey(keysDir: string, kid: string, key: KeyObject): void {
  mkdirSync(publicKeyDir(keysDir), { recursive: true });
  const pem = publicOf(key).export({ format: "pem", type: "spki" });
  writeFileAtomic(publicKeyPath(keysDir, kid), pem.toString());
}

/**
 * Creates the signing pair if there is none (idempotent). A missing public key of the active
 * pair is re-derived from its private key.
 */
export function ensureKeyPair(keysDir: string): { kid: string; created: boolean } {
  return withLock(keysDir, () => {
    const kid = activeKid(keysDir);
    if (kid && existsSync(privateKeyPath(keysDir, kid))) {
      if (!existsSync(publicKeyPath(keysDir, kid))) writePublicKey(keysDir, kid, readPrivateKey(keysDir, kid));
      return { kid, created: false };
    }
    return { kid: createKeyPair(keysDir), created: true };
  });
}

/** Adds a new pair and makes it the signer; the previous public key stays, so its keys verify. */
export function rotateKeyPair(keysDir: string): { kid: string; previous: string | null } {
  return withLock(keysDir, () => {
    const previous = activeKid(keysDir);
    return { kid: createKeyPair(keysDir), previous };
  });
}

/** Removes a pair (public and private key): keys it signed stop verifying. Never the signer. */
export function retireKeyPair(keysDir: string, kid: string): void {
  withLock(keysDir, () => {
    if (!KEY_ID_PATTERN.test(kid)) throw new KeysError(`not a key pair id: ${JSON.stringify(kid)}`);
    if (kid === activeKid(keysDir)) {
      throw new KeysError(`${kid} is the active signing key; run \`npm run keys -- rotate\` first`);
    }
    const files = [publicKeyPath(keysDir, kid), privateKeyPath(keysDir, kid)].filter((f) => existsSync(f));
    if (files.length === 0) throw new KeysError(`no key pair ${kid} in ${keysDir}`);
    for (const file of files) rmSync(file);
  });
}

function readPrivateKey(keysDir: string, kid: string): KeyObject {
  return createPrivateKey(readFileSync(privateKeyPath(keysDir, kid)));
}

/** The active signing key; throws KeysError before `init`. */
export function loadSigningKey(keysDir: string): { kid: string; privateKey: KeyObject } {
  const kid = activeKid(keysDir);
  if (!kid || !existsSync(privateKeyPath(keysDir, kid))) {
    throw new KeysError(`no signing key in ${keysDir}: run \`npm run keys -- init\` first`);
  }
  return { kid, privateKey: readPrivateKey(keysDir, kid) };
}

export interface KeyPairInfo {
  kid: string;
  /** Signs new keys. */
  active: boolean;
  /** The gateways accept keys it signed. */
  verifies: boolean;
  /** Its private key is here. */
  hasPrivateKey: boolean;
}

export function listKeyPairs(keysDir: string): KeyPairInfo[] {
  const kidsIn = (dir: string) => {
    try {
      return readdirSync(dir)
        .filter((n) => n.endsWith(".pem"))
        .map((n) => n.slice(0, -".pem".length));
    } catch {
      return [];
    }
  };
  const pub = new Set(kidsIn(publicKeyDir(keysDir)));
  const priv = new Set(kidsIn(privateKeyDir(keysDir)));
  const active = activeKid(keysDir);
  return [...new Set([...pub, ...priv])].sort().map((kid) => ({
    kid,
    active: kid === active,
    verifies: pub.has(kid),
    hasPrivateKey: priv.has(kid),
  }));
}
