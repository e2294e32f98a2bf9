import path from "node:path";
import { readFile } from "node:fs/promises";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestKeys, type TestKeys } from "../../../testkit/gateway.ts";
import { spawnGateway, type GatewayProcess } from "../../../testkit/gateway-process.ts";
import { spawnPetService, type SpawnedPetService } from "../../../testkit/pet-service.ts";
import { startTcpProxy, type TcpProxy } from "../../../testkit/tcp-proxy.ts";
import { createTestPki, type PemPair, type TestCa, type TestPki } from "../../../testkit/tls.ts";
import { until } from "../../../testkit/until.ts";

// The hop as deployed with TLS: the real gateway and pet service processes, certificates this
// test makes. The mTLS gateway reaches the pet service through a TCP relay the test can cut, so
// its next connection is a new handshake.
let pki: TestPki;
let ca: TestCa;
let keys: TestKeys;
let pet: SpawnedPetService;
let relay: TcpProxy;
/** The mTLS gateway's client certificate files (rotated by a test). */
let clientFiles: PemPair;
const gateways: GatewayProcess[] = [];

async function gateway(env: Record<string, string>, addr = pet.address): Promise<GatewayProcess> {
  const g = await spawnGateway({ PET_SERVICE_ADDR: addr, ...keys.gatewayEnv, LOG_LEVEL: "info", ...env });
  gateways.push(g);
  return g;
}

const list = async (g: GatewayProcess, requestId: string) =>
  fetch(`${g.url}/v1/pets`, { headers: { Authorization: `Bearer ${await keys.issue()}`, "X-Request-Id": requestId } });

/** The caller the pet service logged for the call of `requestId`. */
function callerOf(requestId: string): string | undefined {
  const line = pet.output().split("\n").find((l) => l.includes(`"requestId":"${requestId}"`) && l.includes('"msg":"rpc"'));
  return line && (JSON.parse(line) as { caller?: string }).caller;
}

beforeAll(async () => {
  [pki, keys] = await Promise.all([createTestPki(), createTestKeys()]);
  ca = await pki.ca("hop-ca");
  const [server, client] = await Promise.all([ca.issue("pet-service"), ca.issue("gateway-a")]);
  clientFiles = { cert: path.join(pki.dir, "gateway-client.pem"), key: path.join(pki.dir, "gateway-client.key") };
  await pki.rotate(clientFiles, client);
  pet = await spawnPetService({
    env: { PET_SERVICE_TLS_CERT: server.cert, PET_SERVICE_TLS_KEY: server.key, PET_SERVICE_TLS_CLIENT_CA: ca.cert },
    credentials: grpc.credentials.createSsl(await readFile(ca.cert), await readFile(client.key), await readFile(client.cert)),
  });
  relay = await startTcpProxy({ host: "127.0.0.1", port: pet.port });
}, 60_000);

afterAll(async () => {
  for (const g of gateways) g.child.kill("SIGTERM");
  await Promise.all(gateways.map((g) => g.exited));
  await relay?.close();
  await pet?.stop();
  await Promise.all([pki?.remove(), keys?.remove()]);
});

describe("a gateway with PET_SERVICE_TLS_CA, _CLIENT_CERT and _CLIENT_KEY", () => {
  let mtls: GatewayProcess;
  beforeAll(async () => {
    mtls = await gateway(
      { PET_SERVICE_TLS_CA: ca.cert, PET_SERVICE_TLS_CLIENT_CERT: clientFiles.cert, PET_SERVICE_TLS_CLIENT_KEY: clientFiles.key },
      `127.0.0.1:${relay.port}`,
    );
  });

  it("serves over mTLS, is ready (its health checks use the same TLS), and the pet service names it as the caller", async () => {
    expect((await fetch(`${mtls.url}/readyz`)).status).toBe(200);
    const res = await list(mtls, "tls-gw-1");
    expect(res.status).toBe(200);
    await until("the pet service's line", () => callerOf("tls-gw-1") !== undefined);
    expect(callerOf("tls-gw-1")).toBe("CN=gateway-a, O=Pet Store");
  });

  it("presents a rotated client certificate on its next connection, without a restart", async () => {
    await pki.rotate(clientFiles, await ca.issue("gateway-b"));
    await until("the gateway re-reads its files", () => mtls.output().includes("TLS files re-read"), 10_000, 100);
    // Connections already open keep their certificate; cut them so the next call makes a new one.
    await relay.cut();
    await relay.restore();
    let n = 0;
    await until("a request over a new connection", async () => (await list(mtls, `tls-gw-rotated-${++n}`)).status === 200, 10_000, 100);
    await until("the pet service's line", () => callerOf(`tls-gw-rotated-${n}`) !== undefined);
    expect(callerOf(`tls-gw-rotated-${n}`)).toBe("CN=gateway-b, O=Pet Store");
    expect(mtls.child.exitCode).toBeNull();
  });
});

describe.each<[string, () => Record<string, string>]>([
  ["without TLS settings (plaintext to a TLS pet service)", () => ({})],
  ["with the CA but no client certificate (to a pet service that requires one)", () => ({ PET_SERVICE_TLS_CA: ca.cert })],
])("a gateway %s", (_name, env) => {
  let g: GatewayProcess;
  beforeAll(async () => {
    g = await gateway(env());
  });

  it("answers 503 service_unavailable with Retry-After (never a hang or a 500) and is not ready", async () => {
    const res = await list(g, "tls-refused-1");
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toMatch(/^[1-9][0-9]*$/);
    expect(((await res.json()) as { code: string }).code).toBe("service_unavailable");
    const ready = await fetch(`${g.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { reasons: string[] }).reasons).toEqual([expect.stringMatching(/^pet service unreachable/)]);
  });
});
