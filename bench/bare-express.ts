/**
 * The benchmark's baseline (scenario b): a bare Express app that answers GET /v1/pets with the
 * exact bytes the gateway answered GET /v1/pets?limit=20 with (read from BARE_BODY_FILE, which
 * bench/run.ts writes after seeding). Same Express settings as the gateway (no ETag, no
 * X-Powered-By) and the same Content-Type, so the difference to scenario (a) is the gateway's
 * work: auth, quota, headers, logging, metrics, the gRPC hop and the pet service.
 *
 *   BARE_PORT=8090 BARE_BODY_FILE=/tmp/body.json node bench/bare-express.ts
 */
import { readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import express from "express";

const file = process.env.BARE_BODY_FILE;
if (!file) {
  console.error("bare-express: BARE_BODY_FILE must name the file holding the response body");
  process.exit(2);
}
const body = readFileSync(file, "utf8");

const app = express();
app.disable("x-powered-by");
app.set("etag", false);
app.get("/v1/pets", (_req, res) => {
  res.type("application/json").send(body);
});

const server = app.listen(Number(process.env.BARE_PORT ?? 0), "127.0.0.1", () => {
  console.log(JSON.stringify({ msg: "bare-express listening", port: (server.address() as AddressInfo).port }));
});
const stop = () => server.close(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
