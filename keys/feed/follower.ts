import type { KeyEvent } from "../../lib/key-record.ts";
import type { Logger } from "../../lib/logger.ts";
import type { KeyRegistry } from "../registry/store.ts";

/** How often the events table is read: a row written by the CLI or another replica reaches long polls within about this. */
export const FOLLOW_INTERVAL_MS = 100;
const PAGE = 1000;

export interface FeedFollower {
  /** The highest seq seen in the events table. */
  head(): number;
  /**
   * Resolves once an event with seq > `after` exists (at once when one does), or after `ms`, or
   * when `signal` aborts (the client left): never rejects.
   */
  waitAfter(after: number, ms: number, signal?: AbortSignal): Promise<void>;
  /** Reads the table now (after a write of this process), instead of at the next tick. */
  poke(): void;
  close(): Promise<void>;
}

export interface FollowerDeps {
  registry: KeyRegistry;
  logger: Logger;
  /** New events in seq order, each batch once (Redis publishing); awaited before the next read. */
  onEvents?: (events: KeyEvent[]) => Promise<void>;
  intervalMs?: number;
}

/**
 * Follows the registry's events table whoever writes it (this process, the `npm run keys` command
 * line, another key-service replica on the same PostgreSQL database) by reading the rows after the
 * last seen, every FOLLOW_INTERVAL_MS; long polls wait on it. Rows become visible in seq order
 * (keys/registry/store.ts), so following by seq misses none. A failed read (database down) is
 * retried at the next tick; waiters keep waiting until their own deadline.
 */
export async function startFeedFollower(deps: FollowerDeps): Promise<FeedFollower> {
  const { registry, logger, onEvents } = deps;
  const intervalMs = deps.intervalMs ?? FOLLOW_INTERVAL_MS;
  // Publishing starts from where it stopped (onEvents decides what is new to it); waking starts from now.
  let head = await registry.lastSeq();
  const waiters = new Set<{ after: number; wake: () => void }>();
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let closed = false;
  let failing = false;

  const wakeReady = () => {
    for (const w of waiters) if (head > w.after) w.wake();
  };

  const readOnce = async () => {
    try {
      for (;;) {
        const events = await registry.events(head, PAGE);
        if (events.length === 0) break;
        head = events.at(-1)!.seq;
        wakeReady();
        if (onEvents) await onEvents(events);
        if (events.length < PAGE) break;
      }
      if (failing) logger.info({ head }, "events table readable again");
      failing = false;
    } catch (err) {
      if (!failing) logger.warn({ err }, "reading the events table failed; retrying");
      failing = true;
    }
  };

  const tick = () => {
    if (closed || running) return;
    running = readOnce().finally(() => {
      running = undefined;
      if (!closed) {
        clearTimeout(timer);
        timer = setTimeout(tick, intervalMs);
      }
    });
  };
  tick();

  return {
    head: () => head,
    waitAfter(after, ms, signal) {
      if (closed || head > after || ms <= 0 || signal?.aborted) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const waiter = {
          after,
          wake: () => {
            clearTimeout(deadline);
            signal?.removeEventListener("abort", waiter.wake);
            waiters.delete(waiter);
            resolve();
          },
        };
        const deadline = setTimeout(waiter.wake, ms);
        signal?.addEventListener("abort", waiter.wake, { once: true });
        waiters.add(waiter);
      });
    },
    poke() {
      if (closed) return;
      clearTimeout(timer);
      if (running) void running.then(() => setImmediate(tick));
      else tick();
    },
    async close() {
      closed = true;
      clearTimeout(timer);
      await running;
      for (const w of waiters) w.wake();
    },
  };
}
