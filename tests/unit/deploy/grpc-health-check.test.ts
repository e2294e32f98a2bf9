import { spawn } from "node:child_process";
import path from "node:path";
import * as grpc from "@grpc/grpc-js";
import { HealthImplementation, type ServingStatus } from "grpc-health-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PET_SERVICE_NAME } from "../../../proto/load.ts";
import { DEPLOY, ROOT } from "../../../testkit/deploy-check/facts.ts";

// deploy/grpc-health-check.mjs (the compose health check) against a real gRPC server.
describe("deploy/grpc-health-check.mjs", () => {
  const health = new HealthImplementation({ "": "SERVING", [PET_SERVICE_NAME]: "SERVING" });
  const server = new grpc.Server();
  let address = "";

  beforeAll(async () => {
    health.addToServer(server);
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
    );
    address = `127.0.0.1:${port}`;
  });
  afterAll(() => server.forceShutdown());

  const run = (...args: string[]) =>
    new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [path.join(DEPLOY, "grpc-health-check.mjs"), ...args], { cwd: ROOT, stdio: ["ignore", "ignore", "pipe"] });
      let stderr = "";
      child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
      child.on("close", (code) => resolve({ code, stderr }));
    });

  it.each<[ServingStatus, number]>([
    ["SERVING", 0],
    ["NOT_SERVING", 1],
  ])("%s → exit code %i", async (status, code) => {
    health.setStatus(PET_SERVICE_NAME, status);
    const r = await run(address, PET_SERVICE_NAME);
    expect(r.code).toBe(code);
    if (code) expect(r.stderr).toMatch(/NOT_SERVING/);
  });

  it("fails for an unknown service and for nothing listening", async () => {
    expect((await run(address, "no.such.Service")).code).toBe(1);
    const closed = new grpc.Server();
    const port = await new Promise<number>((resolve, reject) =>
      closed.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
    );
    closed.forceShutdown();
    const r = await run(`127.0.0.1:${port}`, "", "1000");
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/UNAVAILABLE|DEADLINE_EXCEEDED/);
  });
});
