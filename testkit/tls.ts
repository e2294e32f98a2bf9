import { execFile } from "node:child_process";
import { copyFile, mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/**
 * Certificates a test makes for itself with the openssl CLI (P-256, valid two days, nothing
 * fetched): a CA per call, and leaf certificates it signs that serve both sides of the hop (SAN
 * 127.0.0.1 and localhost, server and client auth).
 */
export interface TestCa {
  /** The CA certificate's PEM file. */
  cert: string;
  /** A new key pair and certificate signed by this CA, in files named after `name`. */
  issue(name: string, subject?: string, san?: string): Promise<PemPair>;
}

export interface PemPair {
  cert: string;
  key: string;
}

export interface TestPki {
  dir: string;
  ca(name: string): Promise<TestCa>;
  /** Replaces `to`'s files with `from`'s (a rotation: each file rewritten in place). */
  rotate(to: PemPair, from: PemPair): Promise<void>;
  remove(): Promise<void>;
}

const EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2"];

export async function createTestPki(): Promise<TestPki> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "petstore-pki-"));
  const file = (name: string) => path.join(dir, name);
  return {
    dir,
    async ca(name) {
      const cert = file(`${name}.pem`);
      const key = file(`${name}.key`);
      await run("openssl", [
        "req", "-x509", ...EC, "-keyout", key, "-out", cert, "-subj", `/CN=${name}`,
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
      ]);
      return {
        cert,
        async issue(leaf, subject = `/CN=${leaf}/O=Pet Store`, san = "IP:127.0.0.1,DNS:localhost") {
          const pair = { cert: file(`${leaf}.pem`), key: file(`${leaf}.key`) };
          await run("openssl", [
            "req", "-x509", ...EC, "-keyout", pair.key, "-out", pair.cert, "-subj", subject, "-CA", cert, "-CAkey", key,
            "-addext", `subjectAltName=${san}`, "-addext", "extendedKeyUsage=serverAuth,clientAuth",
            "-addext", "basicConstraints=CA:FALSE",
          ]);
          return pair;
        },
      };
    },
    async rotate(to, from) {
      await copyFile(from.key, to.key);
      await copyFile(from.cert, to.cert);
    },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/** One CA's certificates as PEM buffers, for a server and a client of mutual TLS on 127.0.0.1–127.0.0.3. */
export interface TestCertificates {
  ca: Buffer;
  serverCert: Buffer;
  serverKey: Buffer;
  clientCert: Buffer;
  clientKey: Buffer;
}

export async function makeTestCertificates(name = "test"): Promise<TestCertificates> {
  const pki = await createTestPki();
  try {
    const ca = await pki.ca(`${name} CA`);
    const server = await ca.issue(`${name}-server`, "/CN=localhost", "DNS:localhost,IP:127.0.0.1,IP:127.0.0.2,IP:127.0.0.3");
    const client = await ca.issue(`${name}-client`, `/CN=${name} client`);
    const [caPem, serverCert, serverKey, clientCert, clientKey] = await Promise.all(
      [ca.cert, server.cert, server.key, client.cert, client.key].map((f) => readFile(f)),
    );
    return { ca: caPem!, serverCert: serverCert!, serverKey: serverKey!, clientCert: clientCert!, clientKey: clientKey! };
  } finally {
    await pki.remove();
  }
}
