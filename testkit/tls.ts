import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

/**
 * Certificates a test makes for itself with the openssl CLI (EC P-256, valid one day): a CA, a
 * server certificate it signed for localhost and 127.0.0.1–127.0.0.3, and a client certificate
 * for mutual TLS. PEM buffers; nothing is written outside a temporary directory, removed at once.
 */
export interface TestCertificates {
  ca: Buffer;
  serverCert: Buffer;
  serverKey: Buffer;
  clientCert: Buffer;
  clientKey: Buffer;
}

export function makeTestCertificates(name = "test"): TestCertificates {
  const dir = mkdtempSync(path.join(os.tmpdir(), "test-certs-"));
  const file = (f: string) => path.join(dir, f);
  const openssl = (...args: string[]) => execFileSync("openssl", args, { stdio: ["ignore", "ignore", "pipe"] });
  const key = (f: string) => openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", file(f));
  try {
    key("ca.key");
    openssl("req", "-x509", "-new", "-key", file("ca.key"), "-subj", `/CN=${name} CA`, "-days", "1", "-out", file("ca.pem"));
    const sign = (who: string, subject: string, ext: string) => {
      key(`${who}.key`);
      openssl("req", "-new", "-key", file(`${who}.key`), "-subj", subject, "-out", file(`${who}.csr`));
      writeFileSync(file(`${who}.ext`), ext);
      openssl("x509", "-req", "-in", file(`${who}.csr`), "-CA", file("ca.pem"), "-CAkey", file("ca.key"), "-CAcreateserial", "-days", "1", "-extfile", file(`${who}.ext`), "-out", file(`${who}.pem`));
    };
    sign("server", "/CN=localhost", "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:127.0.0.2,IP:127.0.0.3\nextendedKeyUsage=serverAuth\n");
    sign("client", `/CN=${name} client`, "extendedKeyUsage=clientAuth\n");
    const read = (f: string) => readFileSync(file(f));
    return { ca: read("ca.pem"), serverCert: read("server.pem"), serverKey: read("server.key"), clientCert: read("client.pem"), clientKey: read("client.key") };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
