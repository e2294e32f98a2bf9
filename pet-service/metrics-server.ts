import http from "node:http";
import type { Registry } from "prom-client";
import { listen } from "../lib/listen.ts";
import type { Logger } from "../lib/logger.ts";
import { exposition } from "../lib/openmetrics.ts";

/**
 * The pet service's optional HTTP listener (METRICS_PORT), for Prometheus and HTTP-only probes:
 *   GET /metrics  Prometheus text format (OpenMetrics, with exemplars, when asked for)
 *   GET /healthz  200 {"status":"ok"} while the process runs (liveness; readiness is gRPC health)
 * Nothing else; it serves no pet data. Plain node:http: two fixed routes need no framework.
 */
export interface MetricsServer {
  /** The bound port (METRICS_PORT=0 picks a free one). */
  port: number;
  /** Stops accepting connections, ends idle keep-alive ones; resolves when closed. Idempotent. */
  close(): Promise<void>;
}

export async function listenMetrics(opts: { host: string; port: number; registry: Registry; logger: Logger }): Promise<MetricsServer> {
  const { registry, logger } = opts;
  const server = http.createServer((req, res) => {
    const path = (req.url ?? "/").split("?", 1)[0];
    if (path !== "/metrics" && path !== "/healthz") return send(res, 404, "text/plain; charset=utf-8", "not found\n");
    if (req.method !== "GET" && req.method !== "HEAD") {
      res.setHeader("Allow", "GET, HEAD");
      return send(res, 405, "text/plain; charset=utf-8", "method not allowed\n");
    }
    if (path === "/healthz") return send(res, 200, "application/json", '{"status":"ok"}');
    // The Prometheus text format, or OpenMetrics (with trace exemplars) when the scraper prefers it.
    exposition(registry, req.headers.accept).then(
      ({ contentType, body }) => send(res, 200, contentType, body),
      (err: unknown) => {
        logger.error({ err }, "collecting metrics failed");
        send(res, 500, "text/plain; charset=utf-8", "internal error\n");
      },
    );
  });
  // Scrapes are small and quick: no reason to hold a slow client's socket for long.
  server.requestTimeout = 10_000;
  server.headersTimeout = 5_000;

  const port = await listen(server, opts.port, opts.host);
  server.on("error", (err) => logger.error({ err }, "metrics server error"));

  let closed: Promise<void> | undefined;
  return {
    port,
    close: () =>
      (closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      })),
  };
}

function send(res: http.ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, { "Content-Type": contentType, "Content-Length": Buffer.byteLength(body), "Cache-Control": "no-store" });
  res.end(body);
}
