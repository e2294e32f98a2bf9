import type { KeyObject } from "node:crypto";
import { loadPublicKeys } from "../../lib/api-key-format.ts";

/**
 * The gateway's verification keys: every `KEYS_DIR/public/<kid>.pem`, re-read on a timer. A
 * rotation (new file) or a retirement (file removed) reaches a running gateway at the next
 * reload, without a restart; reloading reads the files synchronously (a few hundred bytes
 * each): one code path for the first load and for every reload.
 */
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
