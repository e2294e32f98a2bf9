/**
 * Without Redis the limiter's counts live in this gateway's memory only: it publishes the API
 * keys' usage to KEYS_DIR/usage.json (lib/key-usage.ts) about once a second when anything changed,
 * for `keys usage` and `keys list`. A KEYS_DIR the gateway cannot write (a read-only mount) is
 * logged once; limiting goes on.
 */
import { mkdirSync } from "node:fs";
import { usageFilePath, type UsageFile } from "../../lib/key-usage.ts";
import type { Logger } from "../../lib/logger.ts";
import { subjectForKey } from "../../lib/redis-keys.ts";
import { writeFileAtomic } from "../../lib/write-file-atomic.ts";
import type { Clock } from "../../lib/clock.ts";
import type { MemoryStore } from "./memory-store.ts";

export interface UsageFileOptions {
  store: Pick<MemoryStore, "subjectsWith" | "version">;
  keysDir: string;
  clock: Clock;
  logger: Logger;
  intervalMs?: number;
}

/** Starts publishing; the returned function stops it after one last write. */
export function publishUsage(opts: UsageFileOptions): () => void {
  const prefix = subjectForKey("");
  const file = usageFilePath(opts.keysDir);
  let published = -1;
  let failing = false;

  const publish = () => {
    const version = opts.store.version();
    if (version === published) return;
    const usage: UsageFile = { at: Math.floor(opts.clock()), keys: {} };
    for (const [subject, s] of opts.store.subjectsWith(prefix)) {
      const windows: Record<string, [number, number][]> = {};
      for (const [seconds, buckets] of s.windows) windows[seconds] = buckets.map((b) => [b.index, b.count]);
      usage.keys[subject.slice(prefix.length)] = { windows, bannedUntil: s.banUntilMs, lastUsedAt: s.lastUsedMs ?? null };
    }
    try {
      mkdirSync(opts.keysDir, { recursive: true });
      writeFileAtomic(file, JSON.stringify(usage));
      published = version;
      if (failing) opts.logger.info({ file }, "publishing key usage again");
      failing = false;
    } catch (err) {
      if (!failing) opts.logger.warn({ err, file }, "cannot publish key usage for `keys usage` (KEYS_DIR not writable?)");
      failing = true;
    }
  };

  const timer = setInterval(publish, opts.intervalMs ?? 1_000);
  timer.unref();
  return () => {
    clearInterval(timer);
    publish();
  };
}
