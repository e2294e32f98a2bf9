import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import { z } from "zod";

/**
 * Revoked key ids as `npm run keys -- revoke` records them in KEYS_DIR/revoked.json. This is
 * the path that works without Redis: every gateway sharing KEYS_DIR polls the file. With Redis,
 * `revoke` also sets the revocation key that the limiter's Lua script checks on every request.
 */
export interface RevocationList {
  isRevoked(keyId: string): boolean;
  close(): void;
}

export const revokedFilePath = (keysDir: string): string => path.join(keysDir, "revoked.json");

const revokedFileSchema = z.object({
  revoked: z.record(
    z.string(),
    z.object({
      /** Unix seconds. */
      revokedAt: z.number().int(),
      /** Unix seconds; null when the key never expires. Entries are pruned after expiry. */
      expiresAt: z.number().int().nullable(),
    }),
  ),
});
export type RevokedFile = z.infer<typeof revokedFileSchema>;
export type RevokedEntry = RevokedFile["revoked"][string];

/** Parses revoked.json; throws on anything else. */
export function parseRevokedFile(text: string): RevokedFile {
  return revokedFileSchema.parse(JSON.parse(text));
}

/** Reads revoked.json; a missing file is an empty list. */
export function readRevokedFile(keysDir: string): RevokedFile {
  try {
    return parseRevokedFile(readFileSync(revokedFilePath(keysDir), "utf8"));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { revoked: {} };
    throw err;
  }
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
