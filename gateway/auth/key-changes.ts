import { keyChangesFilePath, readKeyChanges, type KeyChange } from "../../lib/key-changes.ts";
import { watchPolledFile } from "./polled-file.ts";

/**
 * The operator's changes to issued keys (plan overrides, rolls) as `keys set-plan` and `keys roll`
 * record them in KEYS_DIR/key-changes.json, polled by every gateway sharing KEYS_DIR (about a
 * second). It is what a gateway applies when Redis has no record of the key, or is unavailable:
 * never a plan from before a change.
 */
export interface KeyChangeList {
  /** The key's change record (the same object until the file changes), if any. */
  get(keyId: string): KeyChange | undefined;
  close(): void;
}

export function watchKeyChanges(opts: { keysDir: string; pollMs?: number }): KeyChangeList & { refresh(): void } {
  const file = watchPolledFile({
    file: keyChangesFilePath(opts.keysDir),
    read: () => readKeyChanges(opts.keysDir).keys,
    empty: Object.create(null) as Record<string, KeyChange>,
    ...(opts.pollMs ? { pollMs: opts.pollMs } : {}),
  });
  return { get: (keyId) => file.current()[keyId], refresh: file.refresh, close: file.close };
}

/** No changes at all (tests, tools that only verify signatures). */
export const NO_KEY_CHANGES: KeyChangeList = { get: () => undefined, close: () => {} };
