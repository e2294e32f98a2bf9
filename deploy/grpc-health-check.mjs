#!/usr/bin/env node
/**
 * grpc.health.v1 Check for container health checks (compose) and manual probing:
 *
 *   node deploy/grpc-health-check.mjs [HOST:PORT] [SERVICE] [TIMEOUT_MS]
 *
 * Defaults: 127.0.0.1:50051, service "" (the whole server), 2000 ms. Exit 0 when the answer is
 * SERVING; exit 1 otherwise (NOT_SERVING, unknown service, unreachable, deadline exceeded), with
 * one line on stderr. Kubernetes does not need it in plaintext: its `grpc:` probes speak the
 * same protocol, but not TLS.
 *
 * TLS: run inside the pet service's container, it reads the service's own PET_SERVICE_TLS_CERT
 * and _KEY and presents them as its client certificate (issue that certificate for server and
 * client auth from the CA of PET_SERVICE_TLS_CLIENT_CA). It asks its own process on loopback,
 * so it does not check the server's name or chain: it checks health, not identity.
 *
 * Plain JavaScript (no tsx start-up cost every few seconds); it uses the image's own
 * @grpc/grpc-js and grpc-health-check.
 */
import { readFileSync } from "node:fs";
import * as grpc from "@grpc/grpc-js";
import { service as healthService } from "grpc-health-check";

const [address = "127.0.0.1:50051", service = "", timeoutArg = "2000"] = process.argv.slice(2);
const timeoutMs = Number(timeoutArg);
if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) {
  process.stderr.write(`grpc-health-check: TIMEOUT_MS must be a positive integer (got ${JSON.stringify(timeoutArg)})\n`);
  process.exit(2);
}

const HealthClient = grpc.makeClientConstructor(healthService, "grpc.health.v1.Health");
const { PET_SERVICE_TLS_CERT: cert, PET_SERVICE_TLS_KEY: key } = process.env;
const credentials = cert && key
  ? grpc.credentials.createSsl(null, readFileSync(key), readFileSync(cert), { rejectUnauthorized: false })
  : grpc.credentials.createInsecure();
// An IP address is no TLS server name (RFC 6066; Node warns): the name is not checked anyway.
const client = new HealthClient(address, credentials, cert && key ? { "grpc.ssl_target_name_override": "localhost" } : {});

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
