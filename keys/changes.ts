import { keyChangesFilePath, readKeyChanges, type KeyChange, type KeyChanges } from "../lib/key-changes.ts";
import { writeFileAtomic } from "../lib/write-file-atomic.ts";
import { KeysError } from "./errors.ts";
import { withLock } from "./files.ts";
import { findIssued, readRevoked, type IssuedKey } from "./registry.ts";
import { resolveKey } from "./revoke.ts";

/** key-changes.json as the gateways read it; a corrupt file is a KeysError naming it. */
export function readChanges(keysDir: string): KeyChanges {
  try {
    return readKeyChanges(keysDir);
  } catch {
    throw new KeysError(`${keyChangesFilePath(keysDir)} is not a valid key change record; fix or remove it`);
  }
}

/**
 * Replaces one key's change record with what `update` makes of it (locked read-modify-write,
 * atomic replace, so concurrent keys commands do not lose each other's changes) and returns it.
 */
export function updateChange(keysDir: string, keyId: string, update: (current: KeyChange) => KeyChange): KeyChange {
  return withLock(keysDir, () => {
    const { keys } = readChanges(keysDir);
    const next = update(keys[keyId] ?? {});
    writeFileAtomic(keyChangesFilePath(keysDir), `${JSON.stringify({ keys: { ...keys, [keyId]: next } }, null, 2)}\n`);
    return next;
  });
}

/**
 * An issued key that can still change (set-plan, roll): given as its token or id, in issued.jsonl,
 * neither revoked nor expired. Throws KeysError naming what is wrong.
 */
export function liveIssuedKey(keysDir: string, keyOrId: string, nowSeconds: number): IssuedKey {
  const { keyId } = resolveKey(keysDir, keyOrId.trim(), nowSeconds);
  const issued = findIssued(keysDir, keyId);
  if (!issued) throw new KeysError(`unknown key id ${JSON.stringify(keyId)}: not in the issued keys of ${keysDir}`);
  if (keyId in readRevoked(keysDir).revoked) throw new KeysError(`${keyId} is revoked; issue a new key instead`);
  if (issued.expiresAt !== null && issued.expiresAt <= nowSeconds) throw new KeysError(`${keyId} has expired; issue a new key instead`);
  return issued;
}

/** Writes a change to Redis (when REDIS_URL is set); a failure says the record stands and how to finish. */
export async function publishOrExplain(keysDir: string, redisUrl: string | undefined, publish: (url: string) => Promise<void>): Promise<boolean> {
  if (!redisUrl) return false;
  await publish(redisUrl).catch((err: Error) => {
    throw new KeysError(
      `recorded in ${keyChangesFilePath(keysDir)} (gateways read it within about a second), but Redis could not be updated ` +
        `(${err.message}); run \`npm run keys -- sync\` once Redis is reachable`,
    );
  });
  return true;
}
