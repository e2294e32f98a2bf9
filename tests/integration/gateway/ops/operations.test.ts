import { once } from "node:events";
import http from "node:http";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnGateway, type GatewayProcess } from "../../../../testkit/gateway-process.ts";
import { startPetService, type RunningPetService } from "../../../../testkit/pet-service.ts";
import { createTestKeys, type TestKeys } from "../../../../testkit/gateway.ts";
import { until } from "../../../../testkit/until.ts";

// What operators rely on: probes, metrics, logs and a clean shutdown of the real gateway process.
let pets: RunningPetService;
let keys: TestKeys;
let gateway: GatewayProcess;
let key: string;

beforeAll(async () => {
  [pets, keys] = await Promise.all([startPetService(), createTestKeys()]);
  key = await keys.issue({ plan: "enterprise", perMinute: 5, perDay: 100 });
  gateway = await spawnGateway({ PET_SERVICE_ADDR: pets.address, ...keys.gatewayEnv, SHUTDOWN_DELAY_MS: "1500" });
});

afterAll(async () => {
  if (gateway?.child.exitCode === null) gateway.child.kill("SIGKILL");
  await pets?.stop();
  await keys?.remove();
});

const auth = () => ({ Authorization: `Bearer ${key}` });

describe("probes", () => {
  it("/healthz and /readyz answer without a key and are not counted against any quota", async () => {
    for (let i = 0; i < 10; i++) {
      expect((await fetch(`${gateway.url}/healthz`)).status).toBe(200);
      expect((await fetch(`${gateway.url}/readyz`)).status).toBe(200);
    }
    const res = await fetch(`${gateway.url}/v1/pets`, { headers: auth() });
    expect(res.headers.get("x-ratelimit-remaining")).toBe("4");
  });

  it("/readyz is 503 with the reasons when the pet service is unreachable", async () => {
    const other = await spawnGateway({ PET_SERVICE_ADDR: "127.0.0.1:1", ...keys.gatewayEnv });
    try {
      const res = await fetch(`${other.url}/readyz`);
      expect(res.status).toBe(503);
      const body = (await res.json()) as { code: string; reasons: string[] };
      expect(body.code).toBe("service_unavailable");
      expect(body.reasons.join()).toMatch(/pet service/);
      expect((await fetch(`${other.url}/healthz`)).status).toBe(200);
    } finally {
      other.child.kill("SIGTERM");
      expect(await other.exited).toBe(0);
    }
  });
});

describe("metrics", () => {
  it("counts requests by route and status, limiter decisions and gRPC calls; not reachable under /v1", async () => {
    await fetch(`${gateway.url}/v1/pets/123456`, { headers: auth() });
    const text = await (await fetch(`${gateway.url}/metrics`)).text();
    expect(text).toMatch(/gateway_http_requests_total\{route="\/v1\/pets\/:petId",method="GET",status="404"\} 1/);
    expect(text).toMatch(/gateway_limiter_decisions_total\{plan="[a-z]+",outcome="admitted"\} [1-9]/);
    expect(text).toMatch(/gateway_grpc_client_duration_seconds_count\{method="GetPet",code="NOT_FOUND"\} 1/);
    expect(text).toMatch(/process_cpu_seconds_total/);
    expect((await fetch(`${gateway.url}/v1/metrics`, { headers: auth() })).status).toBe(404);
  });
});

describe("logs", () => {
  it("log the request id and never the key", async () => {
    await fetch(`${gateway.url}/v1/pets`, { headers: { ...auth(), "X-Request-Id": "ops-log-1" } });
    const logged = () =>
      gateway
        .output()
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l) as Record<string, unknown>)
        .find((l) => l.requestId === "ops-log-1");
    await until("the request is logged", () => logged() !== undefined);
    const line = logged();
    expect(line).toMatchObject({ method: "GET", route: "/v1/pets", status: 200 });
    expect(gateway.output()).not.toContain(key);
    expect(gateway.output()).not.toContain(key.split(".")[2]);
  });

  it("log and count a request whose client left before the answer, as 499", async () => {
    const { hostname, port } = new URL(gateway.url);
    const socket = net.connect(Number(port), hostname);
    await once(socket, "connect");
    const head = [`POST /v1/pets HTTP/1.1`, `Host: ${hostname}`, `Authorization: Bearer ${await keys.issue()}`, "X-Request-Id: ops-gone-1"];
    socket.write(`${[...head, "Content-Type: application/json", "Content-Length: 100"].join("\r\n")}\r\n\r\n{"name":`);
    await new Promise((r) => setTimeout(r, 200));
    socket.destroy();
    const logged = () =>
      gateway
        .output()
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l))
        .find((l) => l.requestId === "ops-gone-1");
    await until("the request is logged", () => logged() !== undefined);
    expect(logged()).toMatchObject({ method: "POST", route: "/v1/pets", status: 499 });
    const text = await (await fetch(`${gateway.url}/metrics`)).text();
    expect(text).toMatch(/gateway_http_requests_total\{route="\/v1\/pets",method="POST",status="499"\} 1/);
  });
});

describe("shutdown", () => {
  it("on SIGTERM: /readyz turns 503, an in-flight request finishes, exit code 0", async () => {
    const { port } = new URL(gateway.url);
    // An in-flight create whose body is still arriving when SIGTERM lands.
    const inFlight = new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(
        { host: "127.0.0.1", port, path: "/v1/pets", method: "POST", headers: { ...auth(), "Content-Type": "application/json" } },
        (res) => {
          let body = "";
          res.on("data", (c) => (body += c));
          res.on("end", () => resolve({ status: res.statusCode!, body }));
        },
      );
      req.on("error", reject);
      req.write('{"name":"Last one in",');
      setTimeout(() => req.end('"categoryId":1}'), 800);
    });
    await new Promise((r) => setTimeout(r, 100));
    gateway.child.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 200));
    const ready = await fetch(`${gateway.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { reasons: string[] }).reasons).toContain("shutting down");

    const done = await inFlight;
    expect(done.status).toBe(201);
    expect(JSON.parse(done.body)).toMatchObject({ name: "Last one in" });
    expect(await gateway.exited).toBe(0);
    expect(gateway.output()).toMatch(/"msg":"gateway stopped"/);
  });
});

describe("shutdown of kept-alive connections", () => {
  it("a request in flight at SIGTERM is answered with Connection: close, and the process exits without waiting for the keep-alive timeout", async () => {
    const other = await spawnGateway({ PET_SERVICE_ADDR: pets.address, ...keys.gatewayEnv, SHUTDOWN_DELAY_MS: "0" });
    const { port } = new URL(other.url);
    const agent = new http.Agent({ keepAlive: true });
    try {
      // A pooled client (a load balancer's, a service's): its connection would stay open after the answer.
      const inFlight = new Promise<{ status: number; connection: string | undefined; at: number }>((resolve, reject) => {
        const req = http.request(
          { host: "127.0.0.1", port, path: "/v1/pets", method: "POST", agent, headers: { ...auth(), "Content-Type": "application/json" } },
          (res) => {
            res.resume();
            res.on("end", () => resolve({ status: res.statusCode!, connection: res.headers.connection, at: Date.now() }));
          },
        );
        req.on("error", reject);
        req.write('{"name":"Kept alive",');
        setTimeout(() => req.end('"categoryId":1}'), 500);
      });
      await new Promise((r) => setTimeout(r, 100));
      other.child.kill("SIGTERM");
      const done = await inFlight;
      expect(done.status).toBe(201);
      expect(await other.exited).toBe(0);
      // Not after Node's keep-alive timeout (5 s) of the answered connection.
      expect(Date.now() - done.at).toBeLessThan(2000);
      expect(done.connection).toBe("close");
    } finally {
      agent.destroy();
      if (other.child.exitCode === null) other.child.kill("SIGKILL");
    }
  });
});
