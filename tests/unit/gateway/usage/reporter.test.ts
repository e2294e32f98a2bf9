import http from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";
import pino from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { startUsageReporter, type UsageReporter } from "../../../../gateway/usage/reporter.ts";
import type { UsageReport } from "../../../../gateway/usage/counter.ts";
import { until } from "../../../../testkit/until.ts";

/** A key service's POST /v1/usage/reports on loopback: answers `status()` and records every report. */
async function receiver(status: () => number) {
  const received: { auth: string | undefined; report: UsageReport }[] = [];
  const server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => (body += c));
    req.on("end", () => {
      received.push({ auth: req.headers.authorization, report: JSON.parse(body) as UsageReport });
      res.writeHead(status(), { "Content-Type": "application/json" }).end('{"accepted":true}');
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received, close: () => new Promise<void>((r) => server.close(() => r())) };
}

function capture() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _e, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: "info" }, stream), lines };
}

function metrics() {
  const outcomes: string[] = [];
  let dropped = 0;
  return {
    outcomes,
    dropped: () => dropped,
    sink: { reports: { labels: ({ outcome }: { outcome: string }) => ({ inc: () => void outcomes.push(outcome) }) }, dropped: { inc: (n: number) => void (dropped += n) } },
  };
}

const T0 = Date.UTC(2030, 0, 1, 10);
let reporter: UsageReporter | undefined;
afterEach(async () => {
  await reporter?.close(100);
  reporter = undefined;
});

describe("usage reporter", () => {
  it("sends from its timer with the gateway token; a report not acknowledged is sent again with the same id, counted once", async () => {
    let answers = [503, 503, 202];
    const rx = await receiver(() => answers.shift() ?? 202);
    const m = metrics();
    reporter = startUsageReporter({ url: rx.url, token: "pskadm_x", gatewayId: "gw", logger: capture().logger, metrics: m.sink, intervalMs: 50 });
    reporter.counter.count("key_a", "2xx", T0);
    await until("a report is acknowledged", () => m.outcomes.includes("sent"));
    reporter.counter.count("key_a", "2xx", T0);
    await until("the next report is acknowledged", () => m.outcomes.filter((o) => o === "sent").length === 2);
    expect(m.outcomes).toEqual(["failed", "failed", "sent", "sent"]);
    const ids = rx.received.map((r) => r.report.reportId);
    expect(new Set(ids.slice(0, 3)).size).toBe(1);
    expect(ids[3]).not.toBe(ids[0]);
    expect(rx.received.every((r) => r.auth === "Bearer pskadm_x")).toBe(true);
    expect(reporter.backlog()).toBe(0);
    await rx.close();
  });

  it("through an outage keeps at most the bound, drops past it (counted, logged once), and delivers the rest after", async () => {
    let up = false;
    const rx = await receiver(() => (up ? 202 : 503));
    const m = metrics();
    const log = capture();
    reporter = startUsageReporter({ url: rx.url, token: "t", gatewayId: "gw", logger: log.logger, metrics: m.sink, intervalMs: 50, maxBacklogKeyHours: 2 });
    for (const key of ["key_a", "key_b", "key_c", "key_d"]) for (let i = 0; i < 3; i++) reporter.counter.count(key, "4xx", T0);
    expect(m.dropped()).toBe(6);
    expect(reporter.backlog()).toBe(2);
    await until("a report failed", () => m.outcomes.includes("failed"));
    expect(log.lines.filter((l) => String(l.msg).startsWith("usage backlog full"))).toHaveLength(1);
    up = true;
    await until("the kept counts are acknowledged", () => reporter!.backlog() === 0 && m.outcomes.includes("sent"));
    const delivered = rx.received.at(-1)!.report.buckets.map((b) => [b.keyId, b["4xx"]]);
    expect(delivered).toEqual([
      ["key_a", 3],
      ["key_b", 3],
    ]);
    await rx.close();
  });

  it("close() sends what is left within its deadline", async () => {
    const rx = await receiver(() => 202);
    reporter = startUsageReporter({ url: rx.url, token: "t", gatewayId: "gw", logger: capture().logger, metrics: metrics().sink, intervalMs: 60_000 });
    reporter.counter.count("key_a", "limited", T0);
    await reporter.close(1_000);
    expect(rx.received.map((r) => r.report.buckets[0]!.limited)).toEqual([1]);
    await rx.close();
  });
});
