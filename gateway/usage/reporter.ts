/**
 * Sends this gateway's usage to the key service (POST /v1/usage/reports) from a timer, at most one
 * report a second, never from a request. One report is in flight at a time: until the key service
 * acknowledges it (202) the same report, with the same id, is sent again each second (so a retry
 * is counted once), while new requests keep counting into the next one. During an outage the
 * backlog (key-hours waiting, in flight included) is bounded; past the bound new key-hours are
 * dropped, counted in gateway_usage_dropped_total and logged once per burst. close() sends what is
 * left within its deadline.
 */
import type { Logger } from "../../lib/logger.ts";
import { createUsageCounter, requestsIn, type UsageCounter, type UsageReport } from "./counter.ts";
import { keyServiceEndpoint } from "../auth/key-service-endpoint.ts";

/** Key-hours waiting at most, by default: a few MB of memory. */
export const DEFAULT_BACKLOG_KEY_HOURS = 10_000;
/** Key-hours per report (the key service takes up to 5,000 in 1 MiB). */
const REPORT_BUCKETS = 1_000;
const SEND_TIMEOUT_MS = 10_000;

export interface UsageReporterMetrics {
  reports: { labels(l: { outcome: string }): { inc(): void } };
  dropped: { inc(n: number): void };
}

export interface UsageReporterOptions {
  /** KEYS_URL. */
  url: string;
  /** KEYS_SERVICE_TOKEN (scope gateway). */
  token: string | undefined;
  gatewayId: string;
  logger: Logger;
  metrics: UsageReporterMetrics;
  intervalMs?: number;
  maxBacklogKeyHours?: number;
}

export interface UsageReporter {
  counter: UsageCounter;
  /** Key-hours waiting: counted and not acknowledged. */
  backlog(): number;
  /** Stops the timer and sends what is left, giving up after `deadlineMs`. */
  close(deadlineMs: number): Promise<void>;
}

export function startUsageReporter(opts: UsageReporterOptions): UsageReporter {
  const { base, headers } = keyServiceEndpoint(opts, { "Content-Type": "application/json" });
  const max = opts.maxBacklogKeyHours ?? DEFAULT_BACKLOG_KEY_HOURS;
  let inFlight: UsageReport | undefined;
  let sending: Promise<void> | undefined;
  let failing = false;
  let dropping = false;
  const counter = createUsageCounter({
    gatewayId: opts.gatewayId,
    maxKeyHours: () => max - (inFlight?.buckets.length ?? 0),
    onDrop: (n) => {
      opts.metrics.dropped.inc(n);
      if (!dropping) opts.logger.warn({ maxBacklogKeyHours: max }, "usage backlog full (key service not taking reports): dropping the counts of new key-hours");
      dropping = true;
    },
  });

  const send = async (report: UsageReport, signal: AbortSignal): Promise<void> => {
    let outcome: "sent" | "failed" | "rejected";
    let status: number | undefined;
    try {
      const res = await fetch(`${base}/v1/usage/reports`, { method: "POST", headers, body: JSON.stringify(report), signal });
      await res.body?.cancel();
      status = res.status;
      // 400/413: the key service will never take this one (a bug, not an outage): it is dropped, counted.
      outcome = res.status === 202 ? "sent" : res.status === 400 || res.status === 413 ? "rejected" : "failed";
    } catch {
      outcome = "failed";
    }
    opts.metrics.reports.labels({ outcome }).inc();
    if (outcome === "failed") {
      if (!failing) opts.logger.warn({ url: base, status }, "usage report not taken by the key service; retrying each second");
      failing = true;
      return;
    }
    if (outcome === "rejected") {
      opts.metrics.dropped.inc(requestsIn(report));
      opts.logger.error({ status, keyHours: report.buckets.length }, "the key service refused a usage report: its counts are dropped");
    } else if (failing) {
      opts.logger.info("usage reports taken by the key service again");
    }
    failing = false;
    dropping = false;
    inFlight = undefined;
  };

  const tick = (signal: AbortSignal) => {
    if (sending) return sending;
    inFlight ??= counter.seal(REPORT_BUCKETS);
    if (!inFlight) return undefined;
    sending = send(inFlight, signal).finally(() => (sending = undefined));
    return sending;
  };

  const timer = setInterval(() => void tick(AbortSignal.timeout(SEND_TIMEOUT_MS)), opts.intervalMs ?? 1_000);
  timer.unref();

  return {
    counter,
    backlog: () => counter.pending() + (inFlight?.buckets.length ?? 0),
    async close(deadlineMs) {
      clearInterval(timer);
      const signal = AbortSignal.timeout(deadlineMs);
      const expired = new Promise<void>((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
      await Promise.race([sending, expired]);
      // Each round sends the next report (the rest of the key-hours) until none is left or the key service fails.
      while (!signal.aborted) {
        const sent = tick(signal);
        if (!sent) return;
        await Promise.race([sent, expired]);
        if (failing) return;
      }
    },
  };
}
