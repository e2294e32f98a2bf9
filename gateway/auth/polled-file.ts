import { statSync } from "node:fs";

/** A file in KEYS_DIR that gateways poll, parsed; see watchPolledFile. */
export interface PolledFile<T> {
  current(): T;
  /** Checks the file now (the timer does this every `pollMs`). */
  refresh(): void;
  close(): void;
}

/**
 * Polls a file the keys tooling replaces atomically: a stat every `pollMs` (default 1 s), a read
 * only when it changed. A file that cannot be parsed keeps the previous value (fail closed) and is
 * retried at the next poll; a missing file is `read`'s business (it returns the empty value).
 */
export function watchPolledFile<T>(opts: { file: string; read: () => T; empty: T; pollMs?: number }): PolledFile<T> {
  let value = opts.empty;
  let seen = "";

  const refresh = () => {
    let version: string;
    try {
      const st = statSync(opts.file);
      version = `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch {
      version = "absent";
    }
    if (version === seen) return;
    try {
      value = opts.read();
      seen = version;
    } catch {
      // Half-written or corrupt: keep what we had, look again next time.
    }
  };

  refresh();
  const timer = setInterval(refresh, opts.pollMs ?? 1_000);
  timer.unref();
  return {
    current: () => value,
    refresh,
    close: () => clearInterval(timer),
  };
}
