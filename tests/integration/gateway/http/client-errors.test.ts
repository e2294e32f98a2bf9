/**
 * Requests Node's parser refuses before Express sees them (lib/http/client-error.ts,
 * clientErrorHandler), on real sockets: a client that is still sending when it is refused reads
 * its Error answer, and the connection does not outlive the refusal by more than LINGER_MS.
 */
import net from "node:net";
import { beforeAll, describe, expect, it } from "vitest";
import { LINGER_MS } from "../../../../lib/http/client-error.ts";
import { useGatewayProcess, type GatewayProcess } from "../../../../testkit/gateway-process.ts";
import { useGateway } from "../../../../testkit/gateway.ts";
import { rawRequest } from "../../../../testkit/raw-http.ts";
import { until } from "../../../../testkit/until.ts";

/** A request whose header line is 1 MB: refused once the first 16 KiB are in, while the rest is still on its way. */
const OVERSIZED = Buffer.from(`GET /v1/pets HTTP/1.1\r\nHost: gateway\r\nX-Big: ${"a".repeat(1024 * 1024)}\r\nConnection: close\r\n\r\n`, "latin1");

/** Each outcome of `tries` oversized requests, counted: "431 header_fields_too_large", or how the request failed. */
async function oversizedOutcomes(baseUrl: string, tries: number): Promise<Record<string, number>> {
  const outcomes: Record<string, number> = {};
  for (let i = 0; i < tries; i++) {
    const outcome = await rawRequest(baseUrl, OVERSIZED).then(
      (res) => `${res.status} ${(JSON.parse(res.body) as { code: string }).code}`,
      (err: Error) => err.message.slice(0, 80),
    );
    outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
  }
  return outcomes;
}

describe("the real gateway process", () => {
  const ctx = useGatewayProcess({ LOG_LEVEL: "warn" });
  let gateway: GatewayProcess;
  beforeAll(() => {
    gateway = ctx.gateway();
  });

  it("answers a client still sending a 1 MB header line with its 431 every time, never a reset connection (200 tries)", async () => {
    // Closed at once, with the client's bytes unread, the connection was reset under the answer in
    // about 1 of 20 tries: the client saw ECONNRESET and no response.
    expect(await oversizedOutcomes(gateway.url, 200)).toEqual({ "431 header_fields_too_large": 200 });
  });

  it("closes a refused connection whose client goes on sending LINGER_MS after the answer", async () => {
    const { hostname, port } = new URL(gateway.url);
    // Half-open allowed: the client keeps its side open and sending after the gateway's FIN.
    const socket = net.connect({ host: hostname, port: Number(port), allowHalfOpen: true });
    await new Promise((resolve) => socket.once("connect", resolve));
    const started = performance.now();
    let response = "";
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => (response += chunk));
    socket.on("error", () => {}); // the gateway resets it at the end: that is the point
    // Not events.once: it would reject on the reset's error event.
    const answeredAfter = new Promise<number>((resolve) => socket.once("end", () => resolve(performance.now() - started)));
    const closed = new Promise((resolve) => socket.once("close", resolve));
    socket.write(`GET /v1/pets HTTP/1.1\r\nHost: gateway\r\nX-Big: ${"a".repeat(32 * 1024)}`);
    const drip = setInterval(() => socket.writable && socket.write("a".repeat(1024)), 50);
    try {
      await closed;
    } finally {
      clearInterval(drip);
    }
    const closedAfter = performance.now() - started;
    expect(response).toMatch(/^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/);
    expect(response).toMatch(/\r\nConnection: close\r\n/i);
    expect(await answeredAfter).toBeLessThan(1_000);
    expect(closedAfter).toBeGreaterThanOrEqual(LINGER_MS - 100);
    expect(closedAfter).toBeLessThanOrEqual(LINGER_MS + 1_000);
  });
});

describe("an in-process gateway (its open connections visible)", () => {
  const ctx = useGateway();

  it("lets a refused connection go as soon as its client has read the answer and closed, well before LINGER_MS", async () => {
    const gateway = ctx.gateway();
    const open = () => new Promise<number>((resolve, reject) => gateway.server.getConnections((err, n) => (err ? reject(err) : resolve(n))));
    expect(await oversizedOutcomes(gateway.url, 20)).toEqual({ "431 header_fields_too_large": 20 });
    await until("the gateway has no connection left", async () => (await open()) === 0, LINGER_MS / 2, 20);
  });
});
