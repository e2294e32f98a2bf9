import { existsSync } from "node:fs";
import path from "node:path";

/**
 * KEYS_DIR when the variable is unset: data/keys, beside the other local state and out of the
 * source tree (private signing keys are data). A checkout made before that keeps its pair in
 * keys/ (the tooling's source folder); while data/keys does not exist, that one is still used,
 * and `legacyKeysDirNotice` says how to move it.
 */
export const DEFAULT_KEYS_DIR = "data/keys";
const LEGACY_KEYS_DIR = "keys";

export function defaultKeysDir(cwd: string = process.cwd()): string {
  const legacy = !existsSync(path.join(cwd, DEFAULT_KEYS_DIR)) && existsSync(path.join(cwd, LEGACY_KEYS_DIR, "private"));
  return legacy ? LEGACY_KEYS_DIR : DEFAULT_KEYS_DIR;
}

/** One line for the operator when the default fell back to keys/ of an older checkout. */
export function legacyKeysDirNotice(keysDir: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.KEYS_DIR || keysDir !== LEGACY_KEYS_DIR) return undefined;
  return (
    `KEYS_DIR: using ${LEGACY_KEYS_DIR}/ of an older checkout; the default is now ${DEFAULT_KEYS_DIR}/. ` +
    `Move it: mkdir -p ${DEFAULT_KEYS_DIR} && mv ${LEGACY_KEYS_DIR}/private ${LEGACY_KEYS_DIR}/public ${LEGACY_KEYS_DIR}/issued.jsonl ${LEGACY_KEYS_DIR}/revoked.json ${DEFAULT_KEYS_DIR}/ (those present)`
  );
}
