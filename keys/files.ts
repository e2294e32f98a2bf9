import { closeSync, mkdirSync, openSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { KeysError } from "./errors.ts";

const LOCK_WAIT_MS = 5_000;
const LOCK_STALE_MS = 30_000;

const sleep = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/**
 * Runs `fn` holding KEYS_DIR/.lock, so concurrent keys commands (and key services) do not race on
 * the signing pair. A lock older than 30 s is taken to be left behind by a killed process.
 */
export function withLock<T>(keysDir: string, fn: () => T): T {
  mkdirSync(keysDir, { recursive: true });
  const lock = path.join(keysDir, ".lock");
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      closeSync(openSync(lock, "wx"));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      if (lockAge(lock) > LOCK_STALE_MS) rmSync(lock, { force: true });
      else if (Date.now() > deadline) {
        throw new KeysError(`${lock} is held by another keys command (remove it if no such command is running)`);
      } else sleep(25);
    }
  }
  try {
    return fn();
  } finally {
    rmSync(lock, { force: true });
  }
}

function lockAge(lock: string): number {
  try {
    return Date.now() - statSync(lock).mtimeMs;
  } catch {
    return 0;
  }
}
