import { readRevokedFile, revokedFilePath } from "../../lib/api-key-format.ts";
import { watchPolledFile } from "./polled-file.ts";

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
 * Watches KEYS_DIR/revoked.json (watchPolledFile): a corrupt file keeps the previous list, a
 * deleted file clears it.
 */
export function watchRevocations(opts: { keysDir: string; pollMs?: number }): WatchedRevocations {
  const file = watchPolledFile({
    file: revokedFilePath(opts.keysDir),
    read: () => new Set(Object.keys(readRevokedFile(opts.keysDir).revoked)),
    empty: new Set<string>(),
    ...(opts.pollMs ? { pollMs: opts.pollMs } : {}),
  });
  return { isRevoked: (keyId) => file.current().has(keyId), refresh: file.refresh, close: file.close };
}

/** A list that revokes nothing (tests, or a gateway relying on Redis alone). */
export const NO_REVOCATIONS: RevocationList = { isRevoked: () => false, close: () => {} };
