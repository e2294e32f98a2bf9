/**
 * Slow clients are cut on time, on real sockets against the real gateway process: a connection
 * that has not sent its request line and headers within HEADERS_TIMEOUT_MS (here 2 s) gets the
 * 408 JSON Error and is closed within that + 1 s, and one whose body has not arrived within
 * REQUEST_TIMEOUT_MS (3 s) likewise. Meanwhile other clients are served.
 * (2,000 slow connections at once: tests/faults/gateway/slow-clients.test.ts.)
 */
import { beforeAll, expect, it } from "vitest";
import { useGatewayProcess, type GatewayProcess } from "../../../testkit/gateway-process.ts";
import { slowClient } from "../../../testkit/slow-client.ts";

const HEADERS_TIMEOUT_MS = 2_000;
const REQUEST_TIMEOUT_MS = 3_000;
const ctx = useGatewayProcess({
  HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
  REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
  LOG_LEVEL: "warn",
});
let gateway: GatewayProcess;
let key: string;

beforeAll(async () => {
  gateway = ctx.gateway();
  key = await ctx.keys().issue();
});

/** The 408 request_timeout Error, as a JSON body on a closed connection. */
function expect408(response: string): void {
  expect(response).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
  expect(response).toMatch(/\r\nContent-Type: application\/json; charset=utf-8\r\n/i);
  expect(response).toMatch(/\r\nConnection: close\r\n/i);
  const body = JSON.parse(response.slice(response.indexOf("\r\n\r\n") + 4)) as { code: string; status: number };
  expect(body).toMatchObject({ code: "request_timeout", status: 408 });
}

it("cuts headers that trickle in, and a connection that sends nothing, within the headers timeout + 1 s", async () => {
  const trickle = slowClient(gateway.url, "GET /v1/pets HTTP/1.1\r\nHost: gateway\r\n", "X-Slow: yes\r\n", 300);
  const silent = slowClient(gateway.url, "", "", 60_000);
  const normal = await fetch(`${gateway.url}/v1/pets?limit=1`, { headers: { Authorization: `Bearer ${key}` } });
  expect(normal.status).toBe(200); // served while the slow ones wait
  for (const client of [trickle, silent]) {
    const { afterMs, response } = await client.closed;
    expect408(response);
    expect(afterMs).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 100);
    expect(afterMs).toBeLessThanOrEqual(HEADERS_TIMEOUT_MS + 1_000);
  }
});

it("cuts a body that trickles in within the request timeout + 1 s", async () => {
  const head =
    "POST /v1/pets HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\n" +
    `Authorization: Bearer ${key}\r\nContent-Length: 200\r\n\r\n{"name":"`;
  const { afterMs, response } = await slowClient(gateway.url, head, "a", 300).closed;
  expect408(response);
  expect(afterMs).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 100);
  expect(afterMs).toBeLessThanOrEqual(REQUEST_TIMEOUT_MS + 1_000);
});
