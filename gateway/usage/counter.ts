/**
 * This gateway's usage since its last report, in memory (DESIGN, Usage history and the consumer's
 * view): per key and hour, by outcome, every request with a valid key exactly once; the bans it
 * saw start and each key's last admitted request. Bounded: at most `maxKeyHours` key-hours wait
 * (sealed or not); a request of a new key-hour beyond it is dropped and counted, never silently.
 */
import { randomUUID } from "node:crypto";
import type { UsageOutcome } from "../../keys/registry/usage.ts";

const HOUR_MS = 3_600_000;
/** A ban seen again with an end this close to the one announced is the same ban (Retry-After is whole seconds). */
const SAME_BAN_WITHIN_MS = 5_000;

export type Counts = Record<UsageOutcome, number>;

/** POST /v1/usage/reports' body (keys/api/openapi.json, UsageReport). */
export interface UsageReport {
  reportId: string;
  gatewayId: string;
  buckets: ({ keyId: string; hour: string } & Counts)[];
  bans: { keyId: string; until: string }[];
  lastUsed: { keyId: string; at: string }[];
}

export interface UsageCounter {
  count(keyId: string, outcome: UsageOutcome, nowMs: number): void;
  /** A ban of `keyId` until `untilMs` (ms), as a refused request showed it. */
  banned(keyId: string, untilMs: number, nowMs: number): void;
  /** The next report of at most `maxBuckets` key-hours, or undefined when nothing waits; what it holds leaves the counter. */
  seal(maxBuckets: number): UsageReport | undefined;
  /** Key-hours waiting in the counter. */
  pending(): number;
  /** Requests dropped so far past the bound (the counter only grows). */
  dropped(): number;
}

const zero = (): Counts => ({ "2xx": 0, "4xx": 0, "5xx": 0, limited: 0, banned: 0, forbidden: 0 });

export function createUsageCounter(opts: { gatewayId: string; maxKeyHours: () => number; onDrop: (requests: number) => void }): UsageCounter {
  const buckets = new Map<string, { keyId: string; hour: number; counts: Counts }>();
  const bans = new Map<string, number>();
  const announced = new Map<string, number>();
  const lastUsed = new Map<string, number>();
  let dropped = 0;

  return {
    count(keyId, outcome, nowMs) {
      const hour = Math.floor(nowMs / HOUR_MS) * HOUR_MS;
      const id = `${keyId} ${hour}`;
      let bucket = buckets.get(id);
      if (!bucket) {
        if (buckets.size >= opts.maxKeyHours()) {
          dropped++;
          opts.onDrop(1);
          return;
        }
        bucket = { keyId, hour, counts: zero() };
        buckets.set(id, bucket);
      }
      bucket.counts[outcome]++;
      if (outcome === "2xx" || outcome === "4xx" || outcome === "5xx") lastUsed.set(keyId, nowMs);
    },
    banned(keyId, untilMs, nowMs) {
      const known = announced.get(keyId);
      if (known !== undefined && Math.abs(known - untilMs) < SAME_BAN_WITHIN_MS) return;
      announced.set(keyId, untilMs);
      bans.set(keyId, untilMs);
      // Bans over are forgotten: the map holds only keys banned now.
      for (const [k, until] of announced) if (until < nowMs) announced.delete(k);
    },
    seal(maxBuckets) {
      if (buckets.size === 0 && bans.size === 0 && lastUsed.size === 0) return undefined;
      const taken: UsageReport["buckets"] = [];
      for (const [id, b] of buckets) {
        if (taken.length >= maxBuckets) break;
        taken.push({ keyId: b.keyId, hour: new Date(b.hour).toISOString(), ...b.counts });
        buckets.delete(id);
      }
      const report: UsageReport = {
        reportId: randomUUID(),
        gatewayId: opts.gatewayId,
        buckets: taken,
        bans: [...bans].map(([keyId, until]) => ({ keyId, until: new Date(until).toISOString() })),
        lastUsed: [...lastUsed].map(([keyId, at]) => ({ keyId, at: new Date(at).toISOString() })),
      };
      bans.clear();
      lastUsed.clear();
      return report;
    },
    pending: () => buckets.size,
    dropped: () => dropped,
  };
}

/** Requests a report counts (for the dropped metric when one is refused). */
export const requestsIn = (report: UsageReport): number =>
  report.buckets.reduce((sum, b) => sum + b["2xx"] + b["4xx"] + b["5xx"] + b.limited + b.banned + b.forbidden, 0);
