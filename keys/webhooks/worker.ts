import { randomUUID } from "node:crypto";
import type { Clock } from "../../lib/clock.ts";
import type { KeyEvent } from "../../lib/key-record.ts";
import type { Logger } from "../../lib/logger.ts";
import type { KeyRegistry } from "../registry/store.ts";
import type { DeliveryAttempt, WebhookEventType, WebhookProgress, WebhookSubscription } from "../registry/webhooks.ts";
import { webhookBody } from "./payload.ts";
import { DEFAULT_RETRY_SCHEDULE, type RetrySchedule } from "./schedule.ts";
import { sendWebhook } from "./send.ts";

export type DeliveryOutcome = "delivered" | "failed" | "given_up";

export interface WebhookWorkerDeps {
  registry: KeyRegistry;
  clock: Clock;
  logger: Logger;
  /** The highest seq of the events table seen (the feed follower's): a subscription at it has nothing to do. */
  head: () => number;
  onAttempt?: (outcome: DeliveryOutcome) => void;
  schedule?: RetrySchedule;
  /** Per attempt: the receiver's status and headers within this (default 10 s). */
  timeoutMs?: number;
  /** How often subscriptions are looked at (default 250 ms). */
  pollMs?: number;
  /** How long a lease holds unrenewed (default 60 s): a replica killed holding one gives it up after this. */
  leaseMs?: number;
  /** This replica's name in leases: the same name after a restart takes its leases back at once. */
  owner?: string;
}

export interface WebhookWorker {
  /** The age (ms) of the oldest event this replica has yet to deliver; 0 when none. */
  oldestPendingMs(): number;
  /** Stops: an attempt in flight ends (within the timeout) and is recorded, no other starts, leases are given back. */
  close(): Promise<void>;
}

const PAGE = 500;

/**
 * Delivers the events table (the outbox) to every live subscription: per subscription one event at
 * a time in seq order, the next only once the previous was delivered or given up (after the retry
 * schedule), every attempt recorded with the progress in one transaction. A subscription is
 * delivered by the one replica holding its lease (registry/webhooks.ts), renewed while it works;
 * progress is read after the lease is held, so a replica taking over starts where the last left.
 */
export function startWebhookWorker(deps: WebhookWorkerDeps): WebhookWorker {
  const { registry, clock, logger } = deps;
  const schedule = deps.schedule ?? DEFAULT_RETRY_SCHEDULE;
  const timeoutMs = deps.timeoutMs ?? 10_000;
  const pollMs = deps.pollMs ?? 250;
  const leaseMs = deps.leaseMs ?? 60_000;
  const owner = deps.owner ?? randomUUID();
  const leasedUntil = new Map<string, number>();
  const pendingSince = new Map<string, number>();
  const running = new Map<string, Promise<void>>();
  const stop = new AbortController();
  let failing = false;
  /** Subscriptions whose last round failed (registry fault): logged once until one succeeds. */
  const interrupted = new Set<string>();
  let timer: NodeJS.Timeout | undefined;

  /** Holds (takes or renews) the lease with at least half its time left. */
  const holdLease = async (id: string): Promise<boolean> => {
    const now = clock();
    if ((leasedUntil.get(id) ?? 0) - now > leaseMs / 2) return true;
    const until = now + leaseMs;
    if (await registry.leaseWebhook(id, owner, now, until)) {
      leasedUntil.set(id, until);
      return true;
    }
    leasedUntil.delete(id);
    pendingSince.delete(id);
    return false;
  };

  /** The subscription's next event of its types after the cursor, moving the cursor past the others. */
  const nextEvent = async (sub: WebhookSubscription): Promise<KeyEvent | undefined> => {
    const types: readonly string[] = sub.events;
    for (let cursor = sub.progress.cursor; ; ) {
      const events = await registry.events(cursor, PAGE);
      const next = events.find((e) => types.includes(e.type));
      if (next || events.length === 0) {
        if (!next && cursor !== sub.progress.cursor) await registry.recordDelivery(sub.id, owner, null, { ...sub.progress, cursor });
        return next;
      }
      cursor = events.at(-1)!.seq;
    }
  };

  /** One attempt at `event`; whether the subscription moved on to the next event. */
  const attempt = async (sub: WebhookSubscription, event: KeyEvent): Promise<boolean> => {
    const p = sub.progress;
    const at = clock();
    const body = await webhookBody(registry, event);
    const result = await sendWebhook({ url: sub.url, secret: sub.secret, id: `evt_${event.seq}`, timestampSeconds: Math.floor(at / 1000), body, timeoutMs });
    const firstAttemptAt = p.firstAttemptAt ?? at;
    const failures = p.failures + 1;
    const outcome: DeliveryOutcome = result.error === null ? "delivered" : clock() - firstAttemptAt >= schedule.giveUpAfterMs ? "given_up" : "failed";
    const progress: WebhookProgress =
      outcome === "failed"
        ? { cursor: event.seq - 1, failures, firstAttemptAt, nextAttemptAt: Math.ceil(clock() + schedule.delayMs(failures)) }
        : { cursor: event.seq, failures: 0, firstAttemptAt: null, nextAttemptAt: null };
    const record: DeliveryAttempt = { eventSeq: event.seq, type: event.type as WebhookEventType, attempt: failures, status: result.status, at, error: result.error };
    if (!(await registry.recordDelivery(sub.id, owner, record, progress))) {
      leasedUntil.delete(sub.id);
      return false;
    }
    deps.onAttempt?.(outcome);
    if (outcome !== "delivered") {
      // The webhook's id and the event, never its URL (it may carry credentials) or secret.
      logger.warn({ webhookId: sub.id, eventSeq: event.seq, attempt: failures, status: result.status, error: result.error }, outcome === "given_up" ? "webhook delivery given up" : "webhook delivery failed");
    }
    return outcome !== "failed";
  };

  /** Delivers what is due to one subscription, event after event, while it has the lease. */
  const work = async (id: string): Promise<void> => {
    while (!stop.signal.aborted && (await holdLease(id))) {
      const sub = await registry.getWebhook(id);
      if (!sub || sub.deletedAt !== null) break;
      const event = await nextEvent(sub);
      if (!event) {
        pendingSince.delete(id);
        break;
      }
      pendingSince.set(id, event.at);
      if (sub.progress.nextAttemptAt !== null && sub.progress.nextAttemptAt > clock()) break;
      if (!(await attempt(sub, event))) break;
    }
  };

  const tick = async () => {
    try {
      const subs = await registry.listWebhooks();
      const live = new Set(subs.map((s) => s.id));
      for (const id of pendingSince.keys()) if (!live.has(id)) pendingSince.delete(id);
      for (const sub of subs) {
        if (running.has(sub.id)) continue;
        // Nothing new and nothing to retry: no lease taken, no write.
        if (sub.progress.cursor >= deps.head() && sub.progress.nextAttemptAt === null) continue;
        const run = work(sub.id)
          .then(() => void interrupted.delete(sub.id))
          .catch((err: unknown) => {
            if (stop.signal.aborted || interrupted.has(sub.id)) return;
            interrupted.add(sub.id);
            logger.warn({ err: { message: (err as Error).message }, webhookId: sub.id }, "webhook delivery interrupted; retrying");
          })
          .finally(() => running.delete(sub.id));
        running.set(sub.id, run);
      }
      if (failing) logger.info("webhook subscriptions readable again");
      failing = false;
    } catch (err) {
      if (!failing) logger.warn({ err: { message: (err as Error).message } }, "reading webhook subscriptions failed; retrying");
      failing = true;
    }
  };

  const loop = () => {
    timer = setTimeout(() => void tick().finally(() => !stop.signal.aborted && loop()), pollMs);
  };
  loop();

  return {
    oldestPendingMs() {
      const oldest = Math.min(...pendingSince.values());
      return Number.isFinite(oldest) ? Math.max(0, clock() - oldest) : 0;
    },
    async close() {
      stop.abort();
      clearTimeout(timer);
      await Promise.all(running.values());
      await Promise.all([...leasedUntil.keys()].map((id) => registry.releaseWebhook(id, owner).catch(() => {})));
    },
  };
}
