import { generateKeyPairSync } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KEY_AUDIENCE, KEY_ISSUER } from "../../../lib/api-key-format.ts";
import { craftToken, tokenPayload } from "../../../testkit/keys.ts";
import { startPetService, type RunningPetService } from "../../../testkit/pet-service.ts";
import { createTestKeys, startGateway, type RunningGateway, type TestKeys } from "../../../testkit/gateway.ts";
import { fakeClock } from "../../../testkit/fake-clock.ts";

// Forged and stale keys, as an attacker would send them over HTTP: every one is a 401 Error body.
let pets: RunningPetService;
let keys: TestKeys;
let gateway: RunningGateway;
let kid: string;
const clock = fakeClock();

beforeAll(async () => {
  [pets, keys] = await Promise.all([startPetService(), createTestKeys()]);
  gateway = await startGateway({ petServiceAddr: pets.address, keys, clock: clock.clock });
  kid = readdirSync(path.join(keys.dir, "public"))[0]!.replace(/\.pem$/, "");
});

afterAll(async () => {
  await gateway?.close();
  await pets?.stop();
  await keys?.remove();
});

const call = (token: string) => fetch(`${gateway.url}/v1/pets`, { headers: { Authorization: `Bearer ${token}` } });

async function expectUnauthorized(token: string) {
  const res = await call(token);
  expect(res.status).toBe(401);
  expect(await res.json()).toMatchObject({ code: "unauthorized", status: 401 });
  expect(res.headers.get("www-authenticate")).toMatch(/^Bearer /);
}

const claims = (extra: Record<string, unknown> = {}) => ({
  sub: "key_forged000000000",
  plan: "business",
  iss: KEY_ISSUER,
  aud: KEY_AUDIENCE,
  iat: Math.floor(Date.now() / 1000),
  ...extra,
});

describe("the 401 challenge (RFC 6750 §3.1)", () => {
  it("names invalid_token for a key that fails, and no error code when no key was sent", async () => {
    const invalid = await call("not.a.key");
    expect(invalid.headers.get("www-authenticate")).toBe(`Bearer realm="pet-store", error="invalid_token"`);
    const missing = await fetch(`${gateway.url}/v1/pets`);
    expect(missing.status).toBe(401);
    expect(missing.headers.get("www-authenticate")).toBe(`Bearer realm="pet-store"`);
  });
});

describe("forged keys get 401", () => {
  it("a genuine key works (the control case)", async () => {
    expect((await call(await keys.issue())).status).toBe(200);
  });

  it("alg none", async () => {
    await expectUnauthorized(craftToken({ alg: "none", typ: "JWT", kid }, claims(), "none"));
  });

  it("HS256 signed with the gateway's public key as the secret", async () => {
    const publicPem = readFileSync(path.join(keys.dir, "public", `${kid}.pem`));
    await expectUnauthorized(craftToken({ alg: "HS256", typ: "JWT", kid }, claims(), { hs256: publicPem }));
  });

  it("signed by a foreign key under a known kid", async () => {
    const foreign = generateKeyPairSync("ec", { namedCurve: "P-256" }).privateKey;
    await expectUnauthorized(craftToken({ alg: "ES256", typ: "JWT", kid }, claims(), { es256: foreign }));
  });

  it("RS256 from a foreign RSA key", async () => {
    const foreign = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey;
    await expectUnauthorized(craftToken({ alg: "RS256", typ: "JWT", kid }, claims(), { rs256: foreign }));
  });

  it("a genuine signature over a swapped payload (free → enterprise with huge limits)", async () => {
    const genuine = await keys.issue({ plan: "free" });
    const [header, , signature] = genuine.split(".");
    const payload = { ...tokenPayload(genuine), plan: "enterprise", lim: { m: 1e9, d: 1e9 } };
    await expectUnauthorized(`${header}.${Buffer.from(JSON.stringify(payload)).toString("base64url")}.${signature}`);
  });

  it("an unknown kid", async () => {
    const genuine = await keys.issue();
    const [, payload, signature] = genuine.split(".");
    const header = Buffer.from(JSON.stringify({ alg: "ES256", typ: "JWT", kid: "no-such-kid" })).toString("base64url");
    await expectUnauthorized(`${header}.${payload}.${signature}`);
  });

  it("an expired key, even after it was cached as valid", async () => {
    // The key service sets the expiry by the real clock: the gateway's fake clock starts from it.
    const saved = clock.now;
    clock.now = Date.now();
    const token = await keys.issue({ expiresInSeconds: 60 });
    expect((await call(token)).status).toBe(200);
    clock.advance(61_000);
    try {
      await expectUnauthorized(token);
    } finally {
      clock.now = saved;
    }
  });

  it("garbage of every shape", async () => {
    for (const token of ["a.b.c", "....", "x".repeat(5000), "eyJhbGciOiJFUzI1NiJ9", `${"A".repeat(10)}.${"B".repeat(10)}.`]) {
      await expectUnauthorized(token);
    }
  });
});
