import { createPublicKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import { readFileSync } from "node:fs";
import fc from "fast-check";
import { beforeEach, describe, expect, it } from "vitest";
import { AuthError, KEY_AUDIENCE, KEY_ISSUER, loadPublicKeys, MAX_TOKEN_LENGTH, publicKeyPath, type AuthFailure } from "../../../../lib/api-key-format.ts";
import type { EventType } from "../../../../lib/key-record.ts";
import { createKeyVerifier, type CachingKeyVerifier } from "../../../../gateway/auth/jwt-verifier.ts";
import { createPublicKeySet, type PublicKeySet } from "../../../../gateway/auth/jwks.ts";
import { createKeyState, type KeyState } from "../../../../gateway/auth/key-state.ts";
import { issueKey, type IssueOptions } from "../../../../keys/issue.ts";
import { ensureKeyPair, loadSigningKey, rotateKeyPair } from "../../../../keys/key-pairs.ts";
import { craftToken, tokenPayload, useTempKeysDir } from "../../../../testkit/keys.ts";

const keysDir = useTempKeysDir();
const T0 = Date.UTC(2030, 0, 1);
let now: number;
let keys: KeyState;
let publicKeys: PublicKeySet;
let verifier: CachingKeyVerifier;
let signer: { kid: string; privateKey: KeyObject };
let seq = 0;

/** The JWKS the key service would serve for KEYS_DIR/public (RFC 7517). */
const jwksOf = (pairs: Map<string, KeyObject>) => ({
  keys: [...pairs].map(([kid, key]) => ({ ...key.export({ format: "jwk" }), kid, alg: "ES256", use: "sig" })),
});

/** One event of the key service's feed about `keyId`. */
const feed = (type: EventType, keyId: string, changes: Record<string, unknown>) =>
  keys.apply({ seq: ++seq, at: new Date(now).toISOString(), actor: "test", type, keyId, changes });

function makeVerifier(extra: { cacheSize?: number } = {}) {
  verifier = createKeyVerifier({ publicKeys, keys, clock: () => now, ...extra });
  return verifier;
}

const issue = (opts: Partial<IssueOptions> = {}) => issueKey(keysDir(), { plan: "pro", now, ...opts });

/** Claims a genuine key would carry; tests change one thing at a time. */
const goodClaims = (): Record<string, unknown> => ({
  sub: "key_0123456789abcdef",
  plan: "pro",
  iat: Math.floor(now / 1000),
  iss: KEY_ISSUER,
  aud: KEY_AUDIENCE,
});
const signed = (payload: unknown, header: Record<string, unknown> = {}) =>
  craftToken({ alg: "ES256", typ: "JWT", kid: signer.kid, ...header }, payload, { es256: signer.privateKey });

function expectRefused(token: string, reason: AuthFailure) {
  let error: unknown;
  try {
    verifier.verify(token);
  } catch (err) {
    error = err;
  }
  expect(error).toBeInstanceOf(AuthError);
  expect((error as AuthError).reason).toBe(reason);
}

beforeEach(() => {
  now = T0;
  keys = createKeyState();
  keys.markLoaded();
  ensureKeyPair(keysDir());
  signer = loadSigningKey(keysDir());
  publicKeys = createPublicKeySet();
  publicKeys.replace(jwksOf(loadPublicKeys(keysDir())));
  makeVerifier();
});

describe("genuine keys", () => {
  it("verify with plan, key id and expiry", () => {
    const token = issue({ plan: "business", expiresInSeconds: 3600 });
    expect(verifier.verify(token)).toEqual({
      keyId: tokenPayload(token).sub,
      plan: "business",
      expiresAt: Math.floor(T0 / 1000) + 3600,
      generation: 0,
    });
  });

  it("carry enterprise limits", () => {
    const token = issue({ plan: "enterprise", perMinute: 5000, perDay: 2_000_000 });
    expect(verifier.verify(token)).toMatchObject({ plan: "enterprise", perMinute: 5000, perDay: 2_000_000 });
  });

  it("hand-crafted with our key and good claims verifies (the forgeries below differ only as stated)", () => {
    expect(verifier.verify(signed(goodClaims()))).toEqual({ keyId: "key_0123456789abcdef", plan: "pro", generation: 0 });
  });

  it("without expiry verify at any time", () => {
    const token = issue();
    now += 10 * 365 * 86_400_000;
    expect(verifier.verify(token).expiresAt).toBeUndefined();
  });
});

describe("forged and bad keys are refused with AuthError", () => {
  it("alg none", () => {
    const header = { alg: "none", typ: "JWT", kid: signer.kid };
    expectRefused(craftToken(header, goodClaims(), "none"), "invalid");
    // Also with a (meaningless) signature part left in place.
    const withSig = `${craftToken(header, goodClaims(), "none")}${issue().split(".")[2]}`;
    expectRefused(withSig, "invalid");
  });

  it("HS256 signed with the PEM public key as the secret", () => {
    const pem = readFileSync(publicKeyPath(keysDir(), signer.kid));
    const header = { alg: "HS256", typ: "JWT", kid: signer.kid };
    expectRefused(craftToken(header, goodClaims(), { hs256: pem }), "invalid");
    expectRefused(craftToken(header, goodClaims(), { hs256: pem.toString().trim() }), "invalid");
  });

  it("signed by a foreign ES256 key under a known kid", () => {
    const foreign = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey;
    const token = craftToken({ alg: "ES256", kid: signer.kid }, goodClaims(), { es256: foreign });
    expectRefused(token, "invalid");
  });

  it("RS256 (an algorithm we never accept), even with a known kid", () => {
    const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey;
    expectRefused(craftToken({ alg: "RS256", kid: signer.kid }, goodClaims(), { rs256: rsa }), "invalid");
  });

  it("payload swapped, signature kept", () => {
    const token = issue({ plan: "free" });
    const [header, , signature] = token.split(".");
    const upgraded = { ...tokenPayload(token), plan: "enterprise", lim: { m: 1e6, d: 1e9 } };
    expectRefused(`${header}.${Buffer.from(JSON.stringify(upgraded)).toString("base64url")}.${signature}`, "invalid");
  });

  it("signature of another genuine key", () => {
    const [h1, p1] = issue({ plan: "free" }).split(".");
    const [, , s2] = issue({ plan: "enterprise", perMinute: 1, perDay: 1 }).split(".");
    expectRefused(`${h1}.${p1}.${s2}`, "invalid");
  });

  it("unknown kid, even when signed by our own private key", () => {
    expectRefused(signed(goodClaims(), { kid: "no-such-kid" }), "invalid");
    expectRefused(signed(goodClaims(), { kid: undefined }), "invalid");
    expectRefused(signed(goodClaims(), { kid: "../public/x" }), "invalid");
  });

  it("expired, by moving the clock", () => {
    const token = issue({ expiresInSeconds: 60 });
    now += 59_000;
    expect(verifier.verify(token).plan).toBe("pro");
    now += 1_000;
    expectRefused(token, "expired");
  });

  it("revoked", () => {
    const token = issue();
    feed("key.revoked", String(tokenPayload(token).sub), { revokedAt: new Date(now).toISOString() });
    expectRefused(token, "revoked");
  });

  it.each([
    ["wrong iss", { iss: "someone-else" }],
    ["no iss", { iss: undefined }],
    ["wrong aud", { aud: "another-api" }],
    ["no aud", { aud: undefined }],
    ["missing sub", { sub: undefined }],
    ["sub unsafe for Redis keys", { sub: "key_{x}" }],
    ["missing plan", { plan: undefined }],
    ["unknown plan", { plan: "platinum" }],
    ["enterprise without lim", { plan: "enterprise" }],
    ["enterprise with half a lim", { plan: "enterprise", lim: { m: 10 } }],
    ["enterprise with zero limits", { plan: "enterprise", lim: { m: 0, d: 0 } }],
    ["lim on a non-enterprise plan", { plan: "free", lim: { m: 1e6, d: 1e9 } }],
    ["non-numeric exp", { exp: "never" }],
    ["not yet valid (nbf)", { nbf: Math.floor(T0 / 1000) + 3600 }],
  ])("properly signed but %s", (_, change) => {
    expectRefused(signed({ ...goodClaims(), ...change }), "invalid");
  });

  it("a signed payload that is not an object", () => {
    expectRefused(signed("just a string"), "invalid");
  });

  it.each([
    ["empty", ""],
    ["one part", "abc"],
    ["two parts", "abc.def"],
    ["not base64 JSON", "a.b.c"],
    ["too long", `${"a".repeat(MAX_TOKEN_LENGTH)}.b.c`],
  ])("malformed: %s", (_, token) => {
    expect(() => verifier.verify(token)).toThrowError(AuthError);
  });

  it("never throws anything but AuthError, whatever the input", () => {
    const good = issue().split(".");
    const part = fc.oneof(fc.string(), fc.base64String(), fc.constantFrom(...good));
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 5000 }), fc.tuple(part, part, part).map((p) => p.join("."))), (token) => {
        try {
          verifier.verify(token);
          return good.join(".") === token;
        } catch (err) {
          return err instanceof AuthError;
        }
      }),
      { numRuns: 500 },
    );
  });
});

describe("cache", () => {
  it("a second verify is a cache hit (same object, no new verification)", () => {
    const token = issue();
    const first = verifier.verify(token);
    expect(verifier.verify(token)).toBe(first);
    expect(verifier.cached()).toBe(1);
  });

  it("a cache hit still honours expiry", () => {
    const token = issue({ expiresInSeconds: 2 });
    verifier.verify(token);
    expect(verifier.cached()).toBe(1);
    now += 2_000;
    expectRefused(token, "expired");
    expect(verifier.cached()).toBe(0);
  });

  it("a cache hit still honours revocation", () => {
    const token = issue();
    verifier.verify(token);
    feed("key.revoked", String(tokenPayload(token).sub), { revokedAt: new Date(now).toISOString() });
    expectRefused(token, "revoked");
  });

  it("stays bounded, evicting the least recently used", () => {
    makeVerifier({ cacheSize: 3 });
    const tokens = Array.from({ length: 5 }, () => issue());
    const [a] = tokens;
    const firstA = verifier.verify(a!);
    for (const t of tokens.slice(1)) {
      verifier.verify(t);
      verifier.verify(a!); // keeps `a` the most recently used
    }
    expect(verifier.cached()).toBe(3);
    expect(verifier.verify(a!)).toBe(firstA);
  });

  it("does not cache refused tokens", () => {
    expectRefused(signed({ ...goodClaims(), iss: "x" }), "invalid");
    expect(verifier.cached()).toBe(0);
  });
});

describe("the JWKS: rotation and retirement reach a running verifier", () => {
  it("keys of both pairs verify after a rotation; retiring the old pair refuses its keys, cached or not", () => {
    const oldKey = issue();
    verifier.verify(oldKey);
    rotateKeyPair(keysDir());
    const newKey = issue();
    expectRefused(newKey, "invalid");
    publicKeys.replace(jwksOf(loadPublicKeys(keysDir())));
    expect(verifier.verify(newKey).plan).toBe("pro");
    expect(verifier.verify(oldKey).plan).toBe("pro");

    const remaining = loadPublicKeys(keysDir());
    remaining.delete(signer.kid);
    publicKeys.replace(jwksOf(remaining));
    expectRefused(oldKey, "invalid");
    expect(verifier.verify(newKey).plan).toBe("pro");
  });

  it("a foreign public key under our kid verifies nothing of ours, cached or not", () => {
    const token = issue();
    verifier.verify(token);
    const foreign = generateKeyPairSync("ec", { namedCurve: "P-256" }).publicKey;
    publicKeys.replace(jwksOf(new Map([[signer.kid, foreign]])));
    expectRefused(token, "invalid");
  });

  it("skips keys that are not EC P-256 signature keys, and refuses a document that is not a JWKS (keeping the keys held)", () => {
    const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 }).publicKey;
    const p384 = generateKeyPairSync("ec", { namedCurve: "P-384" }).publicKey;
    const ours = createPublicKey(readFileSync(publicKeyPath(keysDir(), signer.kid)));
    const jwks = jwksOf(new Map([[signer.kid, ours]]));
    jwks.keys.push({ ...rsa.export({ format: "jwk" }), kid: "rsa", alg: "RS256", use: "sig" });
    jwks.keys.push({ ...p384.export({ format: "jwk" }), kid: "p384", alg: "ES256", use: "sig" });
    jwks.keys.push({ ...ours.export({ format: "jwk" }), kid: "enc", alg: "ES256", use: "enc" });
    publicKeys.replace(jwks);
    expect(publicKeys.kids()).toEqual([signer.kid]);
    expect(() => publicKeys.replace({ nope: [] })).toThrow();
    expect(verifier.verify(issue()).plan).toBe("pro");
  });
});

describe("the key service's state", () => {
  it("a revocation from the feed refuses the key at once, cached or not", () => {
    const token = issue();
    verifier.verify(token);
    feed("key.created", String(tokenPayload(token).sub), { plan: "pro", revokedAt: null, expiresAt: null, generation: 0 });
    expect(verifier.verify(token).plan).toBe("pro");
    feed("key.revoked", String(tokenPayload(token).sub), { revokedAt: new Date(now).toISOString() });
    expectRefused(token, "revoked");
  });

  it("a rolled key's older token works until its grace ends, then gets rolled; the newest always works", () => {
    const old = signed(goodClaims());
    const id = String(tokenPayload(old).sub);
    const newer = signed({ ...goodClaims(), gen: 1 });
    feed("key.rolled", id, { generation: 1, graceUntil: { "0": new Date(now + 60_000).toISOString() } });
    expect(verifier.verify(old).generation).toBe(0);
    now += 60_000;
    expectRefused(old, "rolled");
    expect(verifier.verify(newer).generation).toBe(1);
  });

  it("the registry's expiry replaces the token's: set, extended, cleared", () => {
    const token = issue({ expiresInSeconds: 60 });
    const id = String(tokenPayload(token).sub);
    feed("key.updated", id, { expiresAt: new Date(now + 10_000).toISOString() });
    now += 10_000;
    expectRefused(token, "expired");
    feed("key.updated", id, { expiresAt: null });
    now += 3_600_000;
    expect(verifier.verify(token).plan).toBe("pro");
  });
});
