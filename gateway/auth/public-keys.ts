import { createPublicKey, type KeyObject } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { KEY_ID_PATTERN } from "../../lib/api-key-format.js";

/**
 * The gateway's verification keys: every `KEYS_DIR/public/<kid>.pem` (EC P-256 public keys).
 * A rotation (new file) or a retirement (file removed) reaches a running gateway at the next
 * reload, without a restart. The files are a few hundred bytes each, so reloading reads them
 * synchronously: one code path for the first load and for every reload.
 */
export const publicKeyDir = (keysDir: string): string => path.join(keysDir, "public");
export const publicKeyPath = (keysDir: string, kid: string): string => path.join(publicKeyDir(keysDir), `${kid}.pem`);

/** Parses a PEM public key; throws unless it is an EC P-256 (ES256) public key. */
export function parsePublicKey(pem: string | Buffer): KeyObject {
  const key = createPublicKey(pem);
  if (key.asymmetricKeyType !== "ec" || key.asymmetricKeyDetails?.namedCurve !== "prime256v1") {
    throw new Error("not an EC P-256 public key");
  }
  return key;
}

/**
 * Reads every valid `<kid>.pem` in KEYS_DIR/public. A missing directory is an empty set;
 * unreadable or foreign files are skipped (they verify nothing). Other directory errors throw.
 */
export function loadPublicKeys(keysDir: string): Map<string, KeyObject> {
  const dir = publicKeyDir(keysDir);
  const keys = new Map<string, KeyObject>();
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return keys;
    throw err;
  }
  for (const name of names.sort()) {
    const kid = name.endsWith(".pem") ? name.slice(0, -".pem".length) : "";
    if (!KEY_ID_PATTERN.test(kid)) continue;
    try {
      keys.set(kid, parsePublicKey(readFileSync(path.join(dir, name))));
    } catch {
      // Not a P-256 public key (or vanished meanwhile): it verifies nothing.
    }
  }
  return keys;
}

export interface PublicKeySet {
  /** The same object across reloads while the key file's key is unchanged. */
  get(kid: string): KeyObject | undefined;
  has(kid: string): boolean;
  kids(): string[];
  /** Re-reads the directory now (the timer does this every `reloadMs`). */
  reload(): void;
  close(): void;
}

/** Loads KEYS_DIR/public now and again every `reloadMs` (default 5 s). */
export function watchPublicKeys(opts: { keysDir: string; reloadMs?: number }): PublicKeySet {
  let keys = loadPublicKeys(opts.keysDir);
  const reload = () => {
    try {
      const fresh = loadPublicKeys(opts.keysDir);
      // Unchanged keys keep their object, so callers can tell "same key" by identity.
      for (const [kid, key] of fresh) {
        const known = keys.get(kid);
        if (known?.equals(key)) fresh.set(kid, known);
      }
      keys = fresh;
    } catch {
      // A transient directory error keeps the keys we have rather than refusing everyone.
    }
  };
  const timer = setInterval(reload, opts.reloadMs ?? 5_000);
  timer.unref();
  return {
    get: (kid) => keys.get(kid),
    has: (kid) => keys.has(kid),
    kids: () => [...keys.keys()],
    reload,
    close: () => clearInterval(timer),
  };
}
