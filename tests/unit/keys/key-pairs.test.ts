import { readFileSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { privateKeyDir, publicKeyPath } from "../../../lib/api-key-format.ts";
import { KeysError } from "../../../keys/errors.ts";
import {
  activeKid,
  ensureKeyPair,
  keyThumbprint,
  listKeyPairs,
  loadSigningKey,
  retireKeyPair,
  rotateKeyPair,
} from "../../../keys/key-pairs.ts";
import { useTempKeysDir } from "../../../testkit/keys.ts";

const keysDir = useTempKeysDir();
const mode = (file: string) => statSync(file).mode & 0o777;

describe("ensureKeyPair (init)", () => {
  it("creates a P-256 pair: private key 0600 in a 0700 directory, public key readable, kid = thumbprint", () => {
    const { kid, created } = ensureKeyPair(keysDir());
    expect(created).toBe(true);
    const privateFile = path.join(privateKeyDir(keysDir()), `${kid}.pem`);
    expect(mode(privateFile)).toBe(0o600);
    expect(mode(privateKeyDir(keysDir()))).toBe(0o700);
    expect(readFileSync(publicKeyPath(keysDir(), kid), "utf8")).toMatch(/^-----BEGIN PUBLIC KEY-----/);
    const { privateKey } = loadSigningKey(keysDir());
    expect(privateKey.asymmetricKeyDetails?.namedCurve).toBe("prime256v1");
    expect(keyThumbprint(privateKey)).toBe(kid);
    expect(activeKid(keysDir())).toBe(kid);
  });

  it("is idempotent", () => {
    const first = ensureKeyPair(keysDir());
    expect(ensureKeyPair(keysDir())).toEqual({ kid: first.kid, created: false });
    expect(listKeyPairs(keysDir())).toHaveLength(1);
  });

  it("restores a deleted public key from the private key", () => {
    const { kid } = ensureKeyPair(keysDir());
    const pem = readFileSync(publicKeyPath(keysDir(), kid), "utf8");
    rmSync(publicKeyPath(keysDir(), kid));
    ensureKeyPair(keysDir());
    expect(readFileSync(publicKeyPath(keysDir(), kid), "utf8")).toBe(pem);
  });

  it("creates KEYS_DIR itself when missing", () => {
    const nested = path.join(keysDir(), "a", "b");
    expect(ensureKeyPair(nested).created).toBe(true);
  });
});

describe("rotate and retire", () => {
  it("rotate makes a new signer and keeps the old public key", () => {
    const { kid: old } = ensureKeyPair(keysDir());
    const { kid, previous } = rotateKeyPair(keysDir());
    expect(previous).toBe(old);
    expect(kid).not.toBe(old);
    expect(loadSigningKey(keysDir()).kid).toBe(kid);
    expect(listKeyPairs(keysDir())).toEqual(
      [
        { kid: old, active: false, verifies: true, hasPrivateKey: true },
        { kid, active: true, verifies: true, hasPrivateKey: true },
      ].sort((a, b) => (a.kid < b.kid ? -1 : 1)),
    );
  });

  it("retire removes both keys of a pair, refuses the signer and unknown kids", () => {
    const { kid: old } = ensureKeyPair(keysDir());
    const { kid } = rotateKeyPair(keysDir());
    expect(() => retireKeyPair(keysDir(), kid)).toThrowError(/active signing key/);
    expect(() => retireKeyPair(keysDir(), "nope")).toThrowError(KeysError);
    expect(() => retireKeyPair(keysDir(), "../x")).toThrowError(KeysError);
    retireKeyPair(keysDir(), old);
    expect(listKeyPairs(keysDir()).map((p) => p.kid)).toEqual([kid]);
    expect(() => retireKeyPair(keysDir(), old)).toThrowError(/no key pair/);
  });

  it("loadSigningKey before init says to run init", () => {
    expect(() => loadSigningKey(keysDir())).toThrowError(/run `npm run keys -- init`/);
  });
});
