import { statSync } from "node:fs";
import { readRevokedFile, revokedFilePath } from "../../lib/api-key-format.ts";

/**
 * Revoked key ids as `npm run keys -- revoke` records them in KEYS_DIR/revoked.json. This is
 * the path that works without Redis: every gateway sharing KEYS_DIR polls the file. With Redis,
 * `revoke` also sets the revocation key that the limiter's Lua script checks on every request.
 */
export interface RevocationList {
  isRevoked(keyId: string): boolean;
  close(): void;
}

export interface WatchedRevocations extends RevocationList {
  /** Checks the file now (the timer does this every `pollMs`). */
  refresh(): void;
}

/**
 * Watches KEYS_DIR/revoked.json: a stat every `pollMs` (default 1 s), a read only when the
 * file changed. A file that cannot be parsed keeps the previous list (fail closed) and is
 * retried at the next poll; a deleted file clears the list.
 */
export function watchRevocations(opts: { keysDir: string; pollMs?: number }): WatchedRevocations {
  const file = revokedFilePath(opts.keysDir);
  let revoked = new Set<string>();
  let seen = "";

  const refresh = () => {
    let version: string;
    try {
      const st = statSync(file);
      version = `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch {
      version = "absent";
    }
    if (version === seen) return;
    try {
      revoked = new Set(Object.keys(readRevokedFile(opts.keysDir).revoked));
      seen = version;
    } catch {
      // Half-written or corrupt: keep what we had, look again next time.
    }
  };

  refresh();
  const timer = setInterval(refresh, opts.pollMs ?? 1_000);
  timer.unref();
  return {
    isRevoked: (keyId) => revoked.has(keyId),
    refresh,
    close: () => clearInterval(timer),
  };
}

/** A list that revokes nothing (tests, or a gateway relying on Redis alone). */
export const NO_REVOCATIONS: RevocationList = { isRevoked: () => false, close: () => {} };
