import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { IDEMPOTENCY_TTL_MS } from "../../../pet-service/idempotency.ts";
import { recordingFetch } from "../../../testkit/openapi-validator.ts";
import { startPetService, type RunningPetService } from "../../../testkit/pet-service.ts";
import { createTestKeys, startGateway, type RunningGateway, type TestKeys } from "../../../testkit/gateway.ts";

// Idempotency-Key on POST /v1/pets, HTTP → gRPC → SQLite through real sockets. The pet
// service's clock is injected, so keys age without sleeping.
const petClock = { now: Date.UTC(2030, 0, 1) };
let pets: RunningPetService;
let keys: TestKeys;
let gateway: RunningGateway;
let key: string;
let recorder: ReturnType<typeof recordingFetch>;

beforeAll(async () => {
  pets = await startPetService({ clock: () => petClock.now });
  keys = await createTestKeys();
  key = await keys.issue({ plan: "business" });
  gateway = await startGateway({ petServiceAddr: pets.address, keys });
  // Every response below is also checked against gateway/http/openapi.json (status, headers, body).
  recorder = recordingFetch(gateway.url);
  vi.stubGlobal("fetch", recorder.fetch);
});

afterAll(async () => {
  vi.unstubAllGlobals();
  await gateway?.close();
  await pets?.stop();
  await keys?.remove();
});

function create(body: unknown, idempotencyKey?: string, apiKey = key): Promise<Response> {
  const headers: Record<string, string> = { Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json" };
  if (idempotencyKey !== undefined) headers["Idempotency-Key"] = idempotencyKey;
  return fetch(`${gateway.url}/v1/pets`, { method: "POST", headers, body: JSON.stringify(body) });
}

async function countNamed(name: string): Promise<number> {
  const res = await fetch(`${gateway.url}/v1/pets?limit=100`, { headers: { Authorization: `Bearer ${key}` } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { name: string }[]).filter((p) => p.name === name).length;
}

async function expectError(res: Response, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  const body = (await res.json()) as { code: string; message: string; status: number; details?: { field: string; message: string }[] };
  expect(body).toMatchObject({ code, status });
  expect(typeof body.message).toBe("string");
  return body;
}

let unique = 0;
const fresh = (label: string) => ({ idempotencyKey: `${label}-${++unique}-8e03978e-40d5-43e8`, name: `${label} ${unique}` });

describe("POST /v1/pets with Idempotency-Key", () => {
  it("answers a retry with the original 201 Pet, its Location and Idempotent-Replayed: true, adding no animal", async () => {
    const { idempotencyKey, name } = fresh("retry");
    const first = await create({ name, categoryId: 7 }, idempotencyKey);
    expect(first.status).toBe(201);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    const pet = await first.json();
    expect(pet).toEqual({ id: expect.any(Number), name, categoryId: 7, status: "available" });

    const retry = await create({ name, categoryId: 7 }, idempotencyKey);
    expect(retry.status).toBe(201);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(retry.headers.get("location")).toBe(first.headers.get("location"));
    expect(await retry.json()).toEqual(pet);
    expect(await countNamed(name)).toBe(1);
  });

  it("reads the key as an sf-string or a bare value: both spell the same key", async () => {
    const { idempotencyKey, name } = fresh("quoted");
    const first = await (await create({ name, categoryId: 1 }, `"${idempotencyKey}"`)).json();
    const bare = await create({ name, categoryId: 1 }, idempotencyKey);
    expect(bare.headers.get("idempotent-replayed")).toBe("true");
    expect(await bare.json()).toEqual(first);

    // Escapes: "a\"b\\c" is the key a"b\c.
    const escaped = `"${name} a\\"b\\\\c"`;
    const original = await (await create({ name, categoryId: 2 }, escaped)).json();
    const same = await create({ name, categoryId: 2 }, `${name} a"b\\c`);
    expect(same.headers.get("idempotent-replayed")).toBe("true");
    expect(await same.json()).toEqual(original);
  });

  it("treats a trimmed name and an omitted status as the same body", async () => {
    const { idempotencyKey, name } = fresh("normalised");
    const first = await (await create({ name, categoryId: 3 }, idempotencyKey)).json();
    const retry = await create({ name: ` ${name} `, categoryId: 3, status: "available" }, idempotencyKey);
    expect(retry.headers.get("idempotent-replayed")).toBe("true");
    expect(await retry.json()).toEqual(first);
  });

  it("answers the same key with a different body with 422 idempotency_key_reused, adding nothing", async () => {
    const { idempotencyKey, name } = fresh("reused");
    expect((await create({ name, categoryId: 5 }, idempotencyKey)).status).toBe(201);
    const res = await create({ name, categoryId: 6 }, idempotencyKey);
    const body = await expectError(res, 422, "idempotency_key_reused");
    expect(body.message).toMatch(/^Idempotency-Key was already used in the last 24 hours for a different request/);
    expect(body.message).toContain("categoryId");
    expect(body.message).not.toMatch(/request_id|category_id/);
    expect(body.details).toBeUndefined();
    expect(res.headers.get("idempotent-replayed")).toBeNull();
    expect(await countNamed(name)).toBe(1);
  });

  it("creates one animal for 10 concurrent retries, all answered 201 with it", async () => {
    const { idempotencyKey, name } = fresh("concurrent");
    const responses = await Promise.all(Array.from({ length: 10 }, () => create({ name, categoryId: 9 }, idempotencyKey)));
    expect(responses.map((r) => r.status)).toEqual(Array(10).fill(201));
    const bodies = (await Promise.all(responses.map((r) => r.json()))) as { id: number }[];
    expect(new Set(bodies.map((b) => b.id)).size).toBe(1);
    expect(responses.filter((r) => r.headers.get("idempotent-replayed") === null)).toHaveLength(1);
    expect(await countNamed(name)).toBe(1);
  });

  it("forgets a key after 24 hours: the same request then adds a new animal", async () => {
    const { idempotencyKey, name } = fresh("expiry");
    const first = (await (await create({ name, categoryId: 2 }, idempotencyKey)).json()) as { id: number };
    petClock.now += IDEMPOTENCY_TTL_MS;
    const later = await create({ name, categoryId: 2 }, idempotencyKey);
    expect(later.status).toBe(201);
    expect(later.headers.get("idempotent-replayed")).toBeNull();
    expect(((await later.json()) as { id: number }).id).not.toBe(first.id);
    expect(await countNamed(name)).toBe(2);
  });

  it("scopes keys to the API key: another client using the same key string gets its own animal", async () => {
    const { idempotencyKey, name } = fresh("scoped");
    const mine = await create({ name, categoryId: 1 }, idempotencyKey);
    const theirs = await create({ name, categoryId: 2 }, idempotencyKey, await keys.issue({ plan: "free" }));
    expect([mine.status, theirs.status]).toEqual([201, 201]);
    expect(theirs.headers.get("idempotent-replayed")).toBeNull();
    expect(((await theirs.json()) as { id: number }).id).not.toBe(((await mine.json()) as { id: number }).id);
    expect(await countNamed(name)).toBe(2);
  });

  it("adds an animal per request without the header", async () => {
    const { name } = fresh("plain");
    expect((await create({ name, categoryId: 1 })).status).toBe(201);
    expect((await create({ name, categoryId: 1 })).status).toBe(201);
    expect(await countNamed(name)).toBe(2);
  });

  it.each([
    ["empty", "", /must not be empty/],
    ["an empty sf-string", '""', /must not be empty/],
    ["an unterminated sf-string", '"abc', /quoted string/],
    ["an sf-string with a bad escape", '"a\\nb"', /quoted string/],
    ["not ASCII", "clé", /printable ASCII/],
    ["longer than 255 characters", "k".repeat(256), /^Idempotency-Key must be at most 255 characters \(got 256\)$/],
  ])("answers a key that is %s with 400 naming Idempotency-Key", async (_label, value, message) => {
    const { name } = fresh("invalid");
    const body = await expectError(await create({ name, categoryId: 1 }, value), 400, "invalid_request");
    expect(body.details).toEqual([{ field: "Idempotency-Key", message: expect.stringMatching(message) }]);
    expect(await countNamed(name)).toBe(0);
  });

  it("accepts a key of exactly 255 characters", async () => {
    const { name } = fresh("longest");
    expect((await create({ name, categoryId: 1 }, "k".repeat(254) + String(unique % 10))).status).toBe(201);
  });

  it("answers a repeated Idempotency-Key header with 400", async () => {
    // fetch would join the two lines into one value, "one, two"; node:http sends them as given.
    const payload = JSON.stringify({ name: "Twice", categoryId: 1 });
    const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = httpRequest(`${gateway.url}/v1/pets`, {
        method: "POST",
        // A raw header list gets nothing added: Host and Content-Length are ours to send.
        headers: [
          ["Host", new URL(gateway.url).host],
          ["Authorization", `Bearer ${key}`],
          ["Content-Type", "application/json"],
          ["Content-Length", String(Buffer.byteLength(payload))],
          ["Idempotency-Key", "one"],
          ["Idempotency-Key", "two"],
        ].flat(),
      });
      req.on("response", (res) => {
        let text = "";
        res.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on("error", reject);
      req.end(payload);
    });
    expect(status).toBe(400);
    expect(JSON.parse(text)).toMatchObject({ code: "invalid_request", details: [{ field: "Idempotency-Key", message: "must be given once" }] });
  });

  // Last in the file: every response above matches the description.
  it("describes every response observed above", () => {
    expect(recorder.problems()).toEqual([]);
  });
});
