#!/usr/bin/env node
/**
 * grpc.health.v1 Check for container health checks (compose) and manual probing:
 *
 *   node deploy/grpc-health-check.mjs [HOST:PORT] [SERVICE] [TIMEOUT_MS]
 *
 * Defaults: 127.0.0.1:50051, service "" (the whole server), 2000 ms. Exit 0 when the answer is
 * SERVING; exit 1 otherwise (NOT_SERVING, unknown service, unreachable, deadline exceeded), with
 * one line on stderr. Kubernetes does not need it: its `grpc:` probes speak the same protocol.
 *
 * Plain JavaScript (no tsx start-up cost every few seconds); it uses the image's own
 * @grpc/grpc-js and grpc-health-check.
 */
import * as grpc from "@grpc/grpc-js";
import { service as healthService } from "grpc-health-check";

const [address = "127.0.0.1:50051", service = "", timeoutArg = "2000"] = process.argv.slice(2);
const timeoutMs = Number(timeoutArg);
if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) {
  process.stderr.write(`grpc-health-check: TIMEOUT_MS must be a positive integer (got ${JSON.stringify(timeoutArg)})\n`);
  process.exit(2);
}

const HealthClient = grpc.makeClientConstructor(healthService, "grpc.health.v1.Health");
const client = new HealthClient(address, grpc.credentials.createInsecure());

client.check({ service }, { deadline: Date.now() + timeoutMs }, (err, res) => {
  client.close();
  const what = `${address} ${JSON.stringify(service)}`;
  if (err) {
    process.stderr.write(`grpc-health-check: ${what}: ${grpc.status[err.code] ?? err.code} ${err.details ?? ""}\n`);
    process.exit(1);
  }
  if (res?.status !== "SERVING") {
    process.stderr.write(`grpc-health-check: ${what}: ${res?.status ?? "no status"}\n`);
    process.exit(1);
  }
  process.exit(0);
});
