import net from "node:net";
import * as grpc from "@grpc/grpc-js";
import { afterEach, describe, expect, it } from "vitest";
import { createPetClient, type PetClient, type PetClientImplementation, type PetClientOptions } from "../../../../gateway/pet-client/pet-client.ts";
import { PET_SERVICE_CONNECTION } from "../../../../gateway/pet-client/transport.ts";
import { errorInfoOf, fieldViolationsOf, retryDelayOf, statusDetailsMetadata } from "../../../../lib/grpc-status-details.ts";
import { petstore_v1_ListPetsResponse as ListPetsResponseCodec } from "../../../../proto/generated/petstore-v1.ts";
import { startDnsServer } from "../../../../testkit/dns-server.ts";
import { servedBy, startReplica, statusError, type ReplicaOptions } from "../../../../testkit/grpc-replica.ts";
import { freePort } from "../../../../testkit/net.ts";
import { spawnPetService } from "../../../../testkit/pet-service.ts";
import { answerWith, startRawGrpcServer } from "../../../../testkit/raw-grpc-server.ts";
import { startTcpProxy } from "../../../../testkit/tcp-proxy.ts";
import { makeTestCertificates } from "../../../../testkit/tls.ts";
import { rejection } from "../../../../testkit/pet-service.ts";
import type { TlsMaterial, TlsSource } from "../../../../lib/tls-files.ts";

/**
 * One suite for every PetService client implementation (gateway/pet-client/): the behaviour the
 * gateway relies on, against real gRPC servers on loopback (grpc-js replicas on 127.0.0.x, a raw
 * HTTP/2 server for what grpc-js never sends, real pet services killed with SIGKILL). Run by
 * http2.test.ts and grpc-js.test.ts.
 */

/** Production's settings with short timers, so backoff, keepalive and re-resolution show within a test. */
const FAST = { ...PET_SERVICE_CONNECTION, keepaliveTimeMs: 200, keepaliveTimeoutMs: 300, minResolveIntervalMs: 200 };

const list = (client: PetClient, requestId = "req-1") => client.listPets({ limit: 1 }, { requestId });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** TLS material the test changes at will: asked by each new connection, as the files' watcher is. */
const tlsSource = (current: () => TlsMaterial): TlsSource => ({ current, onChange: () => () => {}, close() {} });

/** Servers and clients a test made, closed after it (last first). */
function testScope(implementation: PetClientImplementation) {
  const cleanups: (() => unknown)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });
  const client = (address: string, more: Partial<PetClientOptions> = {}) => {
    const c = createPetClient({ address, timeoutMs: 2_000, connection: FAST, implementation, ...more });
    cleanups.push(() => c.close());
    return c;
  };
  const replica = async (opts: ReplicaOptions) => {
    const r = await startReplica(opts);
    cleanups.push(() => r.kill());
    return r;
  };
  const raw = async () => {
    const r = await startRawGrpcServer();
    cleanups.push(() => r.close());
    return r;
  };
  /** Calls until every replica named has served one (connections up), at most 5 s. */
  const warm = async (c: PetClient, names: string[]) => {
    const seen = new Set<string>();
    const until = Date.now() + 5_000;
    while (names.some((n) => !seen.has(n)) && Date.now() < until) seen.add(servedBy(await list(c)));
    expect([...seen].sort()).toEqual([...names].sort());
  };
  const tally = async (c: PetClient, calls: number) => {
    const served: Record<string, number> = {};
    for (let i = 0; i < calls; i++) {
      const name = servedBy(await list(c));
      served[name] = (served[name] ?? 0) + 1;
    }
    return served;
  };

  return { cleanups, client, replica, raw, warm, tally };
}

export function petClientConformance(implementation: PetClientImplementation): void {
  const { cleanups, client, replica, raw, warm, tally } = testScope(implementation);

  describe("balancing over every address of the target", () => {
    it("ipv4:a,b,c: calls go round robin, each replica in turn", async () => {
      const port = await freePort();
      const replicas = await Promise.all(["127.0.0.1", "127.0.0.2", "127.0.0.3"].map((host, i) => replica({ name: `r${i}`, host, port })));
      const c = client(`ipv4:${replicas.map((r) => r.address).join(",")}`);
      await warm(c, ["r0", "r1", "r2"]);
      expect(await tally(c, 30)).toEqual({ r0: 10, r1: 10, r2: 10 });
    });

    it("host:port: the system resolver's addresses (localhost)", async () => {
      const r = await replica({ name: "local", host: "127.0.0.1" });
      const c = client(`localhost:${r.port}`);
      expect(servedBy(await list(c))).toBe("local");
    });

    it("a replica gone leaves the rotation; calls go on to the others without an error", async () => {
      const port = await freePort();
      const [a, b] = await Promise.all([replica({ name: "a", host: "127.0.0.1", port }), replica({ name: "b", host: "127.0.0.2", port })]);
      const c = client(`ipv4:${a.address},${b.address}`);
      await warm(c, ["a", "b"]);
      a.kill();
      expect(await tally(c, 10)).toEqual({ b: 10 });
    });
  });

  describe("connections", () => {
    it("reconnects with backoff while the pet service is down, and serves as soon as it is back", async () => {
      // A port where something accepts and at once drops every connection: each attempt fails.
      let attempts = 0;
      const refuser = net.createServer((socket) => {
        attempts++;
        socket.destroy();
      });
      await new Promise<void>((resolve) => refuser.listen(0, "127.0.0.1", resolve));
      const port = (refuser.address() as net.AddressInfo).port;
      const c = client(`127.0.0.1:${port}`, { connection: PET_SERVICE_CONNECTION });
      const failed = await rejection(list(c));
      expect(failed.code).toBe(grpc.status.UNAVAILABLE);
      // Calls keep coming for 2.5 s; the attempts follow the backoff (200 ms × 1.6ⁿ ± 20 %: about 5), never a tight loop.
      const until = Date.now() + 2_500;
      let failures = 0;
      while (Date.now() < until) {
        expect((await rejection(list(c))).code).toBe(grpc.status.UNAVAILABLE);
        failures++;
        await sleep(20);
      }
      expect(failures).toBeGreaterThan(5); // calls kept coming (each fails at once; fewer on a loaded machine)
      expect(attempts).toBeGreaterThanOrEqual(3);
      expect(attempts).toBeLessThanOrEqual(9);
      await new Promise<void>((resolve) => refuser.close(() => resolve()));
      await replica({ name: "back", port });
      const back = Date.now();
      let served: string | undefined;
      while (!served && Date.now() - back < 4_000) served = await list(c).then(servedBy, () => sleep(50).then(() => undefined));
      expect(served).toBe("back");
      // At most the longest backoff (2 s, +20 %) after it came back.
      expect(Date.now() - back).toBeLessThan(3_000);
    });

    it("keepalive: pings while a call is in flight; a peer that stops answering is dropped and the call retried elsewhere", async () => {
      const slow = await raw();
      slow.respond = (stream) => setTimeout(() => answerWith(stream, ListPetsResponseCodec.encode({ pets: [], nextPageToken: "" }), { "grpc-status": "0" }), 1_000);
      const c = client(slow.address);
      await list(c);
      expect(slow.pings()).toBeGreaterThanOrEqual(2);

      const port = await freePort();
      const [hung, healthy] = await Promise.all([replica({ name: "hung", port }), replica({ name: "healthy", host: "127.0.0.2", port })]);
      const proxy = await startTcpProxy({ host: "127.0.0.1", port: hung.port });
      cleanups.push(() => proxy.close());
      const c2 = client(`ipv4:127.0.0.1:${proxy.port},${healthy.address}`, { timeoutMs: 5_000 });
      await warm(c2, ["hung", "healthy"]);
      proxy.freeze();
      const started = Date.now();
      const served = await tally(c2, 4);
      expect(served).toEqual({ healthy: 4 });
      // Found dead by the keepalive (200 ms + 300 ms unanswered), far inside the 5 s deadline.
      expect(Date.now() - started).toBeLessThan(2_500);
    });

    it("GOAWAY (max_connection_age) under concurrent calls: no call fails", async () => {
      const r = await replica({ name: "ageing", serverOptions: { "grpc.max_connection_age_ms": 100, "grpc.max_connection_age_grace_ms": 2_000 } });
      const c = client(r.address);
      const until = Date.now() + 1_200;
      const results = await Promise.all(
        Array.from({ length: 8 }, async () => {
          let ok = 0;
          while (Date.now() < until) {
            await list(c);
            ok++;
          }
          return ok;
        }),
      );
      expect(results.every((n) => n > 0)).toBe(true);
    });

    it("GOAWAY from a raw server: new calls go on a new connection", async () => {
      const s = await raw();
      s.respond = (stream) => answerWith(stream, ListPetsResponseCodec.encode({ pets: [], nextPageToken: "" }), { "grpc-status": "0" });
      const c = client(s.address);
      await list(c);
      s.goaway();
      await sleep(50);
      await list(c);
      expect(s.connections()).toBe(2);
    });

    it("a graceful shutdown of one replica (GOAWAY): calls go on on the other", async () => {
      const port = await freePort();
      const [a, b] = await Promise.all([replica({ name: "a", port }), replica({ name: "b", host: "127.0.0.2", port })]);
      const c = client(`ipv4:${a.address},${b.address}`);
      await warm(c, ["a", "b"]);
      await a.shutdown();
      expect(await tally(c, 6)).toEqual({ b: 6 });
    });

    it("mutual TLS with the material the function gives, asked again for new connections (rotation)", async () => {
      const first = await makeTestCertificates("first");
      const second = await makeTestCertificates("second");
      const port = await freePort();
      const tlsServer = (certs: typeof first, name: string) =>
        replica({ name, port, credentials: grpc.ServerCredentials.createSsl(certs.ca, [{ cert_chain: certs.serverCert, private_key: certs.serverKey }], true) });
      let current = first;
      const c = client(`localhost:${port}`, { tls: tlsSource(() => ({ ca: current.ca, cert: current.clientCert, key: current.clientKey })) });
      const one = await tlsServer(first, "tls-1");
      expect(servedBy(await list(c))).toBe("tls-1");
      expect(one.calls[0]!.auth.sslPeerCertificate?.subject.CN).toBe("first client");

      // Rotated on both sides: the server restarts with certificates of another CA; the old ones are refused.
      one.kill();
      await one.shutdown();
      current = second;
      await tlsServer(second, "tls-2");
      const until = Date.now() + 5_000;
      let served: string | undefined;
      while (!served && Date.now() < until) served = await list(c).then(servedBy, () => sleep(100).then(() => undefined));
      expect(served).toBe("tls-2");

      const stranger = client(`localhost:${port}`, { tls: tlsSource(() => ({ ca: first.ca })) });
      expect((await rejection(list(stranger))).code).toBe(grpc.status.UNAVAILABLE);
      // No client certificate: under TLS 1.3 the server refuses it after the client's side of the
      // handshake is done, with an alert on the socket; the call fails UNAVAILABLE, not at its deadline.
      const anonymous = client(`localhost:${port}`, { tls: tlsSource(() => ({ ca: second.ca })) });
      expect((await rejection(list(anonymous))).code).toBe(grpc.status.UNAVAILABLE);
    });
  });

  describe("calls", () => {
    it("passes x-request-id and the caller's metadata (traceparent) on every call", async () => {
      const r = await replica({ name: "m" });
      const c = client(r.address);
      const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
      await c.listPets({ limit: 1 }, { requestId: "abc-123", metadata: { traceparent, tracestate: "vendor=1" } });
      const md = r.calls[0]!.metadata;
      expect(md.get("x-request-id")).toEqual(["abc-123"]);
      expect(md.get("traceparent")).toEqual([traceparent]);
      expect(md.get("tracestate")).toEqual(["vendor=1"]);
    });

    it("metadata no header can carry fails the call at once, never sent nor retried", async () => {
      const r = await replica({ name: "m" });
      const c = client(r.address);
      const err = (await rejection(c.listPets({ limit: 1 }, { requestId: "r", metadata: { "bad name": "x" } }))) as Error & { code?: number };
      // Not UNAVAILABLE: that would be retried and answered 503 "try again later".
      expect(err.code).not.toBe(grpc.status.UNAVAILABLE);
      expect(r.calls).toHaveLength(0);
    });

    it("deadline: sent as grpc-timeout, DEADLINE_EXCEEDED when it passes, the call cancelled on the server", async () => {
      const r = await replica({ name: "slow" });
      const c = client(r.address, { timeoutMs: 400 });
      await list(c); // connected: the deadline is all the call's own
      let cancelled = false;
      r.handle("ListPets", ({ call }) => new Promise((resolve) => {
        call.on("cancelled", () => (cancelled = true));
        setTimeout(() => resolve({ pets: [], nextPageToken: "" }), 3_000);
      }));
      const started = Date.now();
      const err = await rejection(list(c));
      const took = Date.now() - started;
      expect(err.code).toBe(grpc.status.DEADLINE_EXCEEDED);
      expect(took).toBeGreaterThanOrEqual(380);
      expect(took).toBeLessThan(2_500); // long before the reply (3 s), even on a loaded machine
      // The server got the deadline from grpc-timeout (without it, it has none: Infinity).
      const serverDeadline = Number(r.calls[1]!.deadline);
      expect(serverDeadline).toBeGreaterThan(started + 200);
      expect(serverDeadline).toBeLessThan(started + 2_000);
      await sleep(100);
      expect(cancelled).toBe(true);
    });

    it("UNAVAILABLE is retried (at most 3 attempts, within the deadline); a create carries the same request_id each time", async () => {
      const r = await replica({ name: "flaky" });
      let failuresLeft = 2;
      r.handle("CreatePet", async ({ request }) => {
        if (failuresLeft-- > 0) throw statusError(grpc.status.UNAVAILABLE, "storage busy");
        return { pet: { id: "7", name: request.name, categoryId: "1", status: "PET_STATUS_AVAILABLE" }, replayed: false };
      });
      const c = client(r.address);
      const created = await c.createPet({ name: "Rex", categoryId: "1", requestId: "key-1" }, { requestId: "req-9" });
      expect(created.pet?.id).toBe("7");
      expect(r.calls.map((call) => [call.request.requestId, call.metadata.get("x-request-id")[0]])).toEqual([
        ["key-1", "req-9"],
        ["key-1", "req-9"],
        ["key-1", "req-9"],
      ]);

      failuresLeft = 5;
      r.calls.length = 0;
      const err = await rejection(c.createPet({ name: "Rex", categoryId: "1", requestId: "key-2" }, { requestId: "req-10" }));
      expect([err.code, err.details, r.calls.length]).toEqual([grpc.status.UNAVAILABLE, "storage busy", 3]);

      // Other codes are the answer: not retried.
      r.calls.length = 0;
      r.handle("CreatePet", async () => Promise.reject(statusError(grpc.status.INTERNAL, "internal error")));
      expect((await rejection(c.createPet({ name: "Rex", categoryId: "1", requestId: "key-3" }, { requestId: "r" }))).code).toBe(grpc.status.INTERNAL);
      expect(r.calls.length).toBe(1);

      // Never past the deadline: with 30 ms, fewer attempts than 3 when the pauses do not fit.
      r.calls.length = 0;
      r.handle("ListPets", () => new Promise((_, reject) => setTimeout(() => reject(statusError(grpc.status.UNAVAILABLE, "busy")), 20)));
      const fast = client(r.address, { timeoutMs: 30 });
      const late = await rejection(list(fast));
      expect([grpc.status.UNAVAILABLE, grpc.status.DEADLINE_EXCEEDED]).toContain(late.code);
      expect(r.calls.length).toBeLessThanOrEqual(2);
    });

    it("errors carry grpc-status-details-bin: BadRequest, ErrorInfo and RetryInfo, and the other trailers", async () => {
      const r = await replica({ name: "details" });
      const violations = [{ field: "name", description: "name is required" }];
      r.handle("CreatePet", async () => {
        const metadata = statusDetailsMetadata(grpc.status.INVALID_ARGUMENT, "name is required", { violations });
        metadata.set("x-extra", "kept");
        throw statusError(grpc.status.INVALID_ARGUMENT, "name is required", metadata);
      });
      r.handle("ListPets", async () => {
        throw statusError(
          grpc.status.UNAVAILABLE,
          "database unreachable",
          statusDetailsMetadata(grpc.status.UNAVAILABLE, "database unreachable", {
            errorInfo: { reason: "STORAGE_UNAVAILABLE", domain: "petstore.v1", metadata: { fault: "unreachable" } },
            retryDelayMs: 2_000,
          }),
        );
      });
      const c = client(r.address);
      const bad = await rejection(c.createPet({ name: "" }, { requestId: "r" }));
      expect([bad.code, bad.details]).toEqual([grpc.status.INVALID_ARGUMENT, "name is required"]);
      expect(fieldViolationsOf(bad)).toEqual(violations);
      expect(bad.metadata.get("x-extra")).toEqual(["kept"]);
      const down = await rejection(list(c));
      expect(errorInfoOf(down)).toEqual({ reason: "STORAGE_UNAVAILABLE", domain: "petstore.v1", metadata: { fault: "unreachable" } });
      expect(retryDelayOf(down)).toBe(2_000);
    });

    it("trailers-only responses, statuses in trailers after headers, percent-encoded messages, non-gRPC HTTP errors", async () => {
      const s = await raw();
      const c = client(s.address);
      s.respond = (stream) => stream.respond({ ":status": 200, "content-type": "application/grpc", "grpc-status": "5", "grpc-message": "no%20such%20pet" }, { endStream: true });
      expect(await rejection(list(c)).then((e) => [e.code, e.details])).toEqual([grpc.status.NOT_FOUND, "no such pet"]);
      s.respond = (stream) => answerWith(stream, undefined, { "grpc-status": "9", "grpc-message": "not now" });
      expect(await rejection(list(c)).then((e) => [e.code, e.details])).toEqual([grpc.status.FAILED_PRECONDITION, "not now"]);
      s.respond = (stream) => answerWith(stream, undefined, { "grpc-status": "0" });
      expect(await rejection(list(c)).then((e) => [e.code, e.details])).toEqual([grpc.status.UNIMPLEMENTED, "No message received"]);
      s.respond = (stream) => stream.respond({ ":status": 404 }, { endStream: true });
      expect(await rejection(list(c)).then((e) => e.code)).toBe(grpc.status.UNIMPLEMENTED);
      // 503 from a proxy in between: UNAVAILABLE, so retried (3 attempts).
      let seen = 0;
      s.respond = (stream) => {
        seen++;
        stream.respond({ ":status": 503 }, { endStream: true });
      };
      expect(await rejection(list(c)).then((e) => e.code)).toBe(grpc.status.UNAVAILABLE);
      expect(seen).toBe(3);
    });

    it("message size limits: a reply over the client's limit is RESOURCE_EXHAUSTED; a request over the server's too", async () => {
      const r = await replica({ name: "big", serverOptions: { "grpc.max_receive_message_length": 1_024 } });
      const pets = Array.from({ length: 200 }, (_, i) => ({ id: String(i + 1), name: "x".repeat(100), categoryId: "1", status: "PET_STATUS_AVAILABLE" }));
      r.handle("ListPets", async () => ({ pets, nextPageToken: "" }));
      const c = client(r.address, { maxReceiveMessageBytes: 16 * 1024 });
      expect((await rejection(list(c))).code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      const roomy = client(r.address, { maxReceiveMessageBytes: 64 * 1024 });
      expect((await list(roomy)).pets).toHaveLength(200);
      expect((await rejection(c.createPet({ name: "y".repeat(2_000), categoryId: "1" }, { requestId: "r" }))).code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    });
  });

  it("kill -9 of a replica with calls in flight: every call succeeds on the other", { timeout: 40_000 }, async () => {
    const a = await spawnPetService();
    cleanups.push(() => a.stop());
    const b = await replica({ name: "survivor", host: "127.0.0.2" });
    const c = client(`ipv4:${a.address},${b.address}`, { timeoutMs: 10_000, connection: PET_SERVICE_CONNECTION });
    let stop = false;
    const failures: string[] = [];
    let ok = 0;
    const callers = Array.from({ length: 16 }, async (_, i) => {
      while (!stop) {
        await c.listPets({ limit: 20 }, { requestId: `k${i}` }).then(
          () => ok++,
          (err: Error) => failures.push(err.message),
        );
      }
    });
    await sleep(500);
    await a.kill("SIGKILL");
    const atKill = ok;
    await sleep(1_000);
    stop = true;
    await Promise.all(callers);
    expect(failures).toEqual([]);
    expect(ok).toBeGreaterThan(atKill);
  });
}

/**
 * dns://server/name:port, with a DNS server of the test's own on loopback (testkit/dns-server.ts).
 * grpc-js honours the server of the target only with GRPC_NODE_USE_ALTERNATIVE_RESOLVER=true
 * (then it no longer reads /etc/hosts: localhost fails), so its run has a file of its own.
 */
/**
 * What the gateway's own client does beyond grpc-js: with no connection ready, the name is
 * resolved again at once (grpc-js waits out dns_min_time_between_resolutions_ms, 30 s), and calls
 * wait for that answer within their deadline rather than fail. A gateway that resolved the name
 * before a second replica existed, and then lost the first, serves from the second at once.
 */
export function http2DnsConformance(): void {
  const { cleanups, client, replica, tally } = testScope("http2");

  it("dns: with no connection left, resolves the name again at once and serves from the replica it now names, no call failing", async () => {
    const dns = await startDnsServer();
    cleanups.push(() => dns.close());
    const port = await freePort();
    dns.set("pets.test", ["127.0.0.2"]);
    const r2 = await replica({ name: "r2", host: "127.0.0.2", port });
    await replica({ name: "r3", host: "127.0.0.3", port });
    // Production's rate limit on resolutions: without the urgent path, 30 s of UNAVAILABLE.
    const c = client(`dns://${dns.address}/pets.test:${port}`, { connection: { ...FAST, minResolveIntervalMs: 30_000 } });
    expect(await tally(c, 3)).toEqual({ r2: 3 });

    dns.set("pets.test", ["127.0.0.3"]);
    await r2.kill();
    expect(await tally(c, 10)).toEqual({ r3: 10 });
  });
}

export function dnsConformance(implementation: PetClientImplementation): void {
  const { cleanups, client, replica, tally } = testScope(implementation);

  it("dns://server/name:port: every A record of the name, and the name resolved again when a connection goes away", async () => {
      const dns = await startDnsServer();
      cleanups.push(() => dns.close());
      const port = await freePort();
      dns.set("pets.test", ["127.0.0.2"]);
      // r2 closes its connections every 300 ms (max_connection_age: GOAWAY), as replicas do every 5 minutes.
      await replica({ name: "r2", host: "127.0.0.2", port, serverOptions: { "grpc.max_connection_age_ms": 300, "grpc.max_connection_age_grace_ms": 1_000 } });
      await replica({ name: "r3", host: "127.0.0.3", port });
      const c = client(`dns://${dns.address}/pets.test:${port}`);
      expect(await tally(c, 5)).toEqual({ r2: 5 });
      const asked = dns.queries("pets.test");

      dns.set("pets.test", ["127.0.0.2", "127.0.0.3"]);
      const until = Date.now() + 5_000;
      let served: Record<string, number> = {};
      while (!served.r3 && Date.now() < until) {
        served = await tally(c, 4);
        await sleep(50);
      }
      expect(dns.queries("pets.test")).toBeGreaterThan(asked);
      expect(served.r3, "the new address joined the rotation").toBeGreaterThan(0);
      expect(await tally(c, 10)).toEqual({ r2: 5, r3: 5 });
    });

}
