import { spawn } from "node:child_process";
import { copyFile, readFile } from "node:fs/promises";
import path from "node:path";
import tls from "node:tls";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { petClient, rejection, runPetServiceToExit, spawnPetService, type SpawnedPetService } from "../../../testkit/pet-service.ts";
import { metricValue } from "../../../testkit/promql.ts";
import { createTestPki, type PemPair, type TestCa, type TestPki } from "../../../testkit/tls.ts";
import { until } from "../../../testkit/until.ts";

// The pet service's TLS as an internal caller meets it: certificates this test makes (openssl),
// the real process, real TLS on loopback. Refusals are what a gRPC client sees: UNAVAILABLE.
let pki: TestPki;
let ca: TestCa;
let serverPair: PemPair;
let clientPair: PemPair;
let strangerPair: PemPair;

const read = (file: string) => readFile(file);
/** A gRPC client's TLS: trusts the test CA, presents `pair` when given. */
async function tlsCredentials(pair?: PemPair, caFile = ca.cert): Promise<grpc.ChannelCredentials> {
  return grpc.credentials.createSsl(await read(caFile), pair ? await read(pair.key) : null, pair ? await read(pair.cert) : null);
}
const withRequestId = (id: string) => {
  const metadata = new grpc.Metadata();
  metadata.set("x-request-id", id);
  return { metadata };
};

beforeAll(async () => {
  pki = await createTestPki();
  ca = await pki.ca("pet-store-ca");
  const other = await pki.ca("other-ca");
  [serverPair, clientPair, strangerPair] = await Promise.all([ca.issue("pet-service"), ca.issue("gateway-test"), other.issue("stranger")]);
});
afterAll(async () => {
  await pki?.remove();
});

describe("mTLS (PET_SERVICE_TLS_CERT, _KEY and _CLIENT_CA)", () => {
  let pet: SpawnedPetService;
  /** The files the process reads, copies of the test's own so a rotation can rewrite them. */
  let served: PemPair;
  let clientCa: string;

  beforeAll(async () => {
    served = { cert: path.join(pki.dir, "served.pem"), key: path.join(pki.dir, "served.key") };
    clientCa = path.join(pki.dir, "client-ca.pem");
    await Promise.all([pki.rotate(served, serverPair), copyFile(ca.cert, clientCa)]);
    pet = await spawnPetService({
      env: { PET_SERVICE_TLS_CERT: served.cert, PET_SERVICE_TLS_KEY: served.key, PET_SERVICE_TLS_CLIENT_CA: clientCa, METRICS_PORT: "0" },
      credentials: await tlsCredentials(clientPair),
    });
  });
  afterAll(async () => {
    await pet?.stop();
  });

  it("serves a client whose certificate its CA signed, and names the caller in the call's log line and in its metrics", async () => {
    const client = petClient(pet.address, await tlsCredentials(clientPair));
    try {
      await client.create({ name: "Tls", categoryId: "1" }, withRequestId("mtls-create-1"));
    } finally {
      client.close();
    }
    await until("the call's log line", () => pet.output().includes('"requestId":"mtls-create-1"'));
    const line = JSON.parse(pet.output().split("\n").find((l) => l.includes('"requestId":"mtls-create-1"'))!) as Record<string, unknown>;
    expect(line).toMatchObject({ msg: "rpc", rpc: "CreatePet", code: "OK", caller: "CN=gateway-test, O=Pet Store" });
    const metrics = `http://127.0.0.1:${pet.metricsPort}/metrics`;
    expect(await metricValue(metrics, "pet_service_grpc_server_handled_total", { method: "CreatePet", code: "OK", caller: "gateway-test" })).toBe(1);
  });

  it.each<[string, () => Promise<grpc.ChannelCredentials>]>([
    ["a plaintext client", async () => grpc.credentials.createInsecure()],
    ["a TLS client without a certificate", () => tlsCredentials()],
    ["a client whose certificate another CA signed", () => tlsCredentials(strangerPair)],
  ])("refuses %s (UNAVAILABLE) and logs the refused handshake", async (_name, credentials) => {
    const before = pet.output().split("refused a connection: TLS handshake failed").length;
    const client = petClient(pet.address, await credentials());
    try {
      expect((await rejection(client.list({}, { timeoutMs: 3_000 }))).code).toBe(grpc.status.UNAVAILABLE);
    } finally {
      client.close();
    }
    await until("the refusal's log line", () => pet.output().split("refused a connection: TLS handshake failed").length > before);
  });

  it("answers deploy/grpc-health-check.mjs (the containers' health check) over mTLS with its own certificate, and only so", async () => {
    const check = (env: Record<string, string>) =>
      new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, ["deploy/grpc-health-check.mjs", pet.address, "petstore.v1.PetService"], {
          cwd: path.resolve(import.meta.dirname, "../../.."),
          env: { PATH: process.env.PATH ?? "", ...env },
          stdio: ["ignore", "ignore", "pipe"],
        });
        let stderr = "";
        child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
        child.on("close", (code) => resolve({ code, stderr }));
      });
    expect(await check({ PET_SERVICE_TLS_CERT: served.cert, PET_SERVICE_TLS_KEY: served.key })).toEqual({ code: 0, stderr: "" });
    const plaintext = await check({});
    expect(plaintext.code).toBe(1);
    expect(plaintext.stderr).toMatch(/UNAVAILABLE/);
  });

  it("takes a new certificate and a new client CA from its files without a restart: new connections use them", async () => {
    const peerOf = (pair: PemPair) =>
      new Promise<string>(async (resolve, reject) => {
        const socket = tls.connect({ port: pet.port, host: "127.0.0.1", servername: "localhost", ca: await read(ca.cert), key: await read(pair.key), cert: await read(pair.cert), ALPNProtocols: ["h2"] }, () => {
          resolve(socket.getPeerX509Certificate()!.subject);
          socket.destroy();
        });
        socket.on("error", reject);
      });
    expect(await peerOf(clientPair)).toContain("CN=pet-service");

    await pki.rotate(served, await ca.issue("pet-service-rotated"));
    await until("new connections present the rotated certificate", async () => (await peerOf(clientPair).catch(() => "")).includes("CN=pet-service-rotated"), 10_000, 200);

    // The client CA rotates too: certificates of the new CA are accepted, those of the old one no longer.
    const nextCa = await pki.ca("pet-store-ca-2");
    const nextClient = await nextCa.issue("gateway-next");
    await copyFile(nextCa.cert, clientCa);
    const listWith = async (pair: PemPair) => {
      const client = petClient(pet.address, await tlsCredentials(pair));
      try {
        return await client.list({}, { timeoutMs: 3_000 }).then(() => "served", (err: grpc.ServiceError) => grpc.status[err.code]);
      } finally {
        client.close();
      }
    };
    await until("a certificate of the new client CA is served", async () => (await listWith(nextClient)) === "served", 10_000, 200);
    expect(await listWith(clientPair)).toBe("UNAVAILABLE");
    expect(pet.child.exitCode).toBeNull();
  });
});

describe("TLS without client certificates (PET_SERVICE_TLS_CERT and _KEY only)", () => {
  let pet: SpawnedPetService;
  beforeAll(async () => {
    pet = await spawnPetService({
      env: { PET_SERVICE_TLS_CERT: serverPair.cert, PET_SERVICE_TLS_KEY: serverPair.key, METRICS_PORT: "0" },
      credentials: await tlsCredentials(),
    });
  });
  afterAll(async () => {
    await pet?.stop();
  });

  it("serves any TLS client, counted as caller anonymous, and refuses plaintext", async () => {
    const client = petClient(pet.address, await tlsCredentials());
    const plain = petClient(pet.address);
    try {
      await client.list({}, withRequestId("tls-list-1"));
      expect((await rejection(plain.list({}, { timeoutMs: 3_000 }))).code).toBe(grpc.status.UNAVAILABLE);
    } finally {
      client.close();
      plain.close();
    }
    const metrics = `http://127.0.0.1:${pet.metricsPort}/metrics`;
    expect(await metricValue(metrics, "pet_service_grpc_server_handled_total", { method: "ListPets", code: "OK", caller: "anonymous" })).toBe(1);
    await until("the call's log line", () => pet.output().includes('"requestId":"tls-list-1"'));
    const line = pet.output().split("\n").find((l) => l.includes('"requestId":"tls-list-1"'));
    expect(line).not.toContain('"caller"');
  });
});

// Every other bad file and pairing is refused the same way (tests/unit/lib/tls-files.test.ts, pet-service config).
it("a key that is not the certificate's stops the start with one line naming PET_SERVICE_TLS_KEY", async () => {
  const { code, stdout, stderr } = await runPetServiceToExit({ PET_SERVICE_TLS_CERT: serverPair.cert, PET_SERVICE_TLS_KEY: clientPair.key });
  expect(code).toBe(1);
  expect(stdout).toBe("");
  expect(stderr).toMatch(/^invalid configuration: PET_SERVICE_TLS_KEY is not the key of PET_SERVICE_TLS_CERT [^\n]+\n$/);
});
