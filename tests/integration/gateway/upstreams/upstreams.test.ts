import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../../../testkit/net.ts";
import { startPetService, type RunningPetService } from "../../../../testkit/pet-service.ts";
import { createTestKeys, startGateway, type RunningGateway, type TestKeys } from "../../../../testkit/gateway.ts";

// /v1/store/* and /v1/categories* forwarded to real HTTP upstreams the test runs.
let pets: RunningPetService;
let keys: TestKeys;
let upstream: http.Server;
let upstreamCalls = 0;
let gateway: RunningGateway;
let bare: RunningGateway;
let key: string;

interface Echo {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

beforeAll(async () => {
  [pets, keys] = await Promise.all([startPetService(), createTestKeys()]);
  key = await keys.issue();
  upstream = http.createServer((req, res) => {
    upstreamCalls++;
    let body = "";
    req.on("data", (chunk) => (body += chunk));
    req.on("end", () => {
      if (req.url?.endsWith("/boom")) {
        res.writeHead(500, { "Content-Type": "text/plain" }).end("Error: secret at /srv/app/orders.js:42");
      } else if (req.url?.endsWith("/cut")) {
        // Dies in the middle of its body.
        res.writeHead(200, { "Content-Type": "application/json" });
        res.write('{"orders":[');
        setTimeout(() => res.socket?.destroy(), 50).unref();
      } else if (req.url?.endsWith("/impostor")) {
        // An upstream that sets headers the gateway owns, beside one of its own.
        res
          .writeHead(200, {
            "Content-Type": "application/json",
            "X-RateLimit-Remaining": "999999",
            RateLimit: '"minute";r=999999;t=1',
            "X-Request-Id": "upstream-made-this",
            "Content-Security-Policy": "default-src *",
            "Cache-Control": "max-age=60",
          })
          .end("{}");
      } else if (req.url?.endsWith("/slow")) {
        setTimeout(() => res.writeHead(200).end("late"), 2000).unref();
      } else {
        const echo: Echo = { method: req.method!, url: req.url!, headers: req.headers, body };
        res.writeHead(req.method === "POST" ? 201 : 200, { "Content-Type": "application/json", "X-Upstream": "yes" }).end(JSON.stringify(echo));
      }
    });
  });
  await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  const deadPort = await freePort();
  gateway = await startGateway({
    petServiceAddr: pets.address,
    keys,
    overrides: {
      upstreams: [
        { prefix: "/store", target: `${base}/api` },
        { prefix: "/categories", target: `http://127.0.0.1:${deadPort}` },
      ],
      upstreamTimeoutMs: 300,
    },
  });
  bare = await startGateway({ petServiceAddr: pets.address, keys });
});

afterAll(async () => {
  await gateway?.close();
  await bare?.close();
  upstream?.closeAllConnections();
  await new Promise((r) => upstream?.close(r));
  await pets?.stop();
  await keys?.remove();
});

const call = (g: RunningGateway, path: string, init: RequestInit = {}, auth: string | null = key) =>
  fetch(`${g.url}${path}`, { ...init, headers: { ...(auth ? { Authorization: `Bearer ${auth}` } : {}), ...(init.headers as Record<string, string>) } });

describe("configured upstreams", () => {
  it("forwards the path after /v1 with its query, without the client's key, and with our headers", async () => {
    const res = await call(gateway, "/v1/store/orders/7?expand=items", { headers: { "X-Request-Id": "up-1", Cookie: "a=b" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-upstream")).toBe("yes");
    expect(res.headers.get("x-ratelimit-limit")).toBe("1000");
    expect(res.headers.get("x-request-id")).toBe("up-1");
    const echo = (await res.json()) as Echo;
    expect(echo.url).toBe("/api/store/orders/7?expand=items");
    expect(echo.headers.authorization).toBeUndefined();
    expect(echo.headers.cookie).toBeUndefined();
    expect(echo.headers["x-request-id"]).toBe("up-1");
    expect(echo.headers["x-api-key-id"]).toMatch(/^key_/);
    expect(echo.headers["x-api-plan"]).toBe("business");
  });

  it("keeps the gateway's own headers (quota, request id, CSP) over an upstream's, and passes the upstream's others", async () => {
    const res = await call(gateway, "/v1/store/impostor", { headers: { "X-Request-Id": "up-2" } });
    expect(res.status).toBe(200);
    expect(Number(res.headers.get("x-ratelimit-remaining"))).toBeLessThan(1000);
    expect(res.headers.get("ratelimit")).not.toMatch(/999999/);
    expect(res.headers.get("x-request-id")).toBe("up-2");
    expect(res.headers.get("content-security-policy")).toBe("default-src 'none'; frame-ancestors 'none'");
    expect(res.headers.get("cache-control")).toBe("max-age=60");
  });

  it("forwards request bodies unchanged", async () => {
    const body = '{"petId":9007199254740993,"quantity":1}';
    const res = await call(gateway, "/v1/store/orders", { method: "POST", body, headers: { "Content-Type": "application/json" } });
    expect(res.status).toBe(201);
    const echo = (await res.json()) as Echo;
    expect(echo).toMatchObject({ method: "POST", body });
  });

  it("requires a key before anything reaches the upstream", async () => {
    const before = upstreamCalls;
    const res = await call(gateway, "/v1/store/orders", {}, null);
    expect(res.status).toBe(401);
    expect(upstreamCalls).toBe(before);
  });

  it("answers an upstream's own 5xx with 502 bad_gateway, never its body", async () => {
    const res = await call(gateway, "/v1/store/boom");
    expect(res.status).toBe(502);
    const text = await res.text();
    expect(JSON.parse(text)).toMatchObject({ code: "bad_gateway", status: 502 });
    expect(text).not.toMatch(/secret|\/srv\//);
  });

  it("answers a slow upstream with 504 upstream_timeout", async () => {
    const res = await call(gateway, "/v1/store/slow");
    expect(res.status).toBe(504);
    expect(await res.json()).toMatchObject({ code: "upstream_timeout", status: 504 });
  });

  it("answers an unreachable upstream with 503 service_unavailable", async () => {
    const res = await call(gateway, "/v1/categories/3");
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ code: "service_unavailable", status: 503 });
    expect(res.headers.get("x-ratelimit-remaining")).not.toBeNull();
  });

  it("cuts the client's response when the upstream dies in the middle of its body, rather than leaving it open", async () => {
    const res = await call(gateway, "/v1/store/cut");
    expect(res.status).toBe(200);
    // The body must end in an error (the client sees a truncated response), not hang forever.
    const outcome = await Promise.race([
      res.text().then(
        () => "ended",
        () => "aborted",
      ),
      new Promise((r) => setTimeout(() => r("still open after 3 s"), 3000)),
    ]);
    expect(outcome).toBe("aborted");
  });

  it("does not forward look-alike paths", async () => {
    expect((await call(gateway, "/v1/storefront")).status).toBe(404);
  });
});

describe("unconfigured upstreams", () => {
  it.each(["/v1/store/orders", "/v1/categories", "/v1/categories/1"])("%s is 404 not_found", async (path) => {
    const res = await call(bare, path);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ code: "not_found", status: 404 });
  });
});
