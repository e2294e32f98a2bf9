import { copyFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError } from "../../../lib/config.ts";
import { watchTlsFiles, type TlsFiles, type TlsMaterial } from "../../../lib/tls-files.ts";
import { createTestPki, type PemPair, type TestCa, type TestPki } from "../../../testkit/tls.ts";
import { until } from "../../../testkit/until.ts";

let pki: TestPki;
let ca: TestCa;
let first: PemPair;
let second: PemPair;

beforeAll(async () => {
  pki = await createTestPki();
  ca = await pki.ca("files-ca");
  [first, second] = await Promise.all([ca.issue("first"), ca.issue("second")]);
});
afterAll(async () => {
  await pki?.remove();
});

/** A logger whose lines the test reads. */
function capturingLogger() {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { logger: pino({ level: "info" }, stream), lines };
}

const filesOf = (pair: PemPair, caFile = ca.cert): TlsFiles => ({
  cert: { variable: "THE_CERT", path: pair.cert },
  key: { variable: "THE_KEY", path: pair.key },
  ca: { variable: "THE_CA", path: caFile },
});

describe("watchTlsFiles", () => {
  it.each<[string, () => Promise<TlsFiles>]>([
    ["THE_CERT", async () => ({ ...filesOf(first), cert: { variable: "THE_CERT", path: path.join(pki.dir, "missing.pem") } })],
    ["THE_CERT", async () => ({ ...filesOf(first), cert: { variable: "THE_CERT", path: first.key } })],
    ["THE_KEY", async () => ({ ...filesOf(first), key: { variable: "THE_KEY", path: first.cert } })],
    ["THE_KEY", async () => ({ ...filesOf(first), key: { variable: "THE_KEY", path: second.key } })],
    ["THE_CA", async () => {
      const garbage = path.join(pki.dir, "garbage.pem");
      await writeFile(garbage, "not a certificate\n");
      return filesOf(first, garbage);
    }],
  ])("refuses a missing, unreadable or inconsistent file naming its variable (%s)", async (variable, files) => {
    const { logger } = capturingLogger();
    const watch = async () => watchTlsFiles(await files(), { logger });
    await expect(watch()).rejects.toThrowError(ConfigError);
    await expect(watch()).rejects.toThrowError(new RegExp(`^invalid configuration: ${variable} `));
  });

  it("hands the new files to its listeners when they change, and keeps the old ones while a rotation is half done", async () => {
    const live = { cert: path.join(pki.dir, "live.pem"), key: path.join(pki.dir, "live.key") };
    await pki.rotate(live, first);
    const { logger, lines } = capturingLogger();
    const source = watchTlsFiles(filesOf(live), { logger, intervalMs: 20 });
    const seen: TlsMaterial[] = [];
    source.onChange((m) => seen.push(m));
    try {
      const firstCert = source.current().cert!;
      // Half a rotation: the new key beside the old certificate is refused, the old pair stays in use.
      await copyFile(second.key, live.key);
      await until("the mismatch is noticed", () => lines.some((l) => l.includes("cannot be used yet")));
      expect(source.current().cert!.equals(firstCert)).toBe(true);
      expect(seen).toEqual([]);
      // The certificate follows: the new pair is taken, and listeners hear of it once.
      await copyFile(second.cert, live.cert);
      await until("the new pair is taken", () => seen.length === 1);
      expect(source.current().cert!.equals(firstCert)).toBe(false);
      expect(seen[0]).toBe(source.current());
      expect(lines.some((l) => l.includes("TLS files re-read"))).toBe(true);
    } finally {
      source.close();
    }
  });
});
