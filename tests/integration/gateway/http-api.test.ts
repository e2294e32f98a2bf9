import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { recordingFetch } from "../../../testkit/openapi-validator.ts";
import { startPetService, type RunningPetService } from "../../../testkit/pet-service.ts";
import { createTestKeys, startGateway, type RunningGateway, type TestKeys } from "../../../testkit/gateway.ts";
import { fakeClock } from "../../../testkit/fake-clock.ts";

// HTTP → gRPC → SQLite through real sockets: the public API as a client sees it.
let pets: RunningPetService;
let keys: TestKeys;
let gateway: RunningGateway;
let key: string;
let recorder: ReturnType<typeof recordingFetch>;
const clock = fakeClock();

beforeAll(async () => {
  pets = await startPetService();
  keys = await createTestKeys();
  key = await keys.issue({ plan: "business" });
  gateway = await startGateway({ petServiceAddr: pets.address, keys, clock: clock.clock });
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

function api(path: string, init: RequestInit & { auth?: string | null } = {}) {
  const headers = new Headers(init.headers);
  if (init.auth !== null) headers.set("Authorization", `Bearer ${init.auth ?? key}`);
  return fetch(`${gateway.url}${path}`, { ...init, headers });
}

const bodyOf = (res: Response): Promise<any> => res.json();

function post(body: string, headers: Record<string, string> = { "Content-Type": "application/json" }) {
  return api("/v1/pets", { method: "POST", body, headers });
}

async function expectError(res: Response, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  const body = await bodyOf(res);
  expect(body).toMatchObject({ code, status });
  expect(typeof body.message).toBe("string");
  return body as { code: string; message: string; status: number; details?: { field: string; message: string }[] };
}

describe("POST /v1/pets", () => {
  it("creates a pet: 201, the Pet with its id, a Location header, status defaulted to available", async () => {
    const res = await post(JSON.stringify({ name: "Rex", categoryId: 7 }));
    expect(res.status).toBe(201);
    const pet = await bodyOf(res);
    expect(pet).toEqual({ id: expect.any(Number), name: "Rex", categoryId: 7, status: "available" });
    expect(res.headers.get("location")).toBe(`/v1/pets/${pet.id}`);
    const fetched = await api(res.headers.get("location")!);
    expect(await bodyOf(fetched)).toEqual(pet);
  });

  it("round-trips int64 exactly, as JSON numbers, over the whole range", async () => {
    for (const categoryId of ["9007199254740993", "9223372036854775807"]) {
      const res = await post(`{"name":"Big","categoryId":${categoryId},"status":"sold"}`);
      expect(res.status).toBe(201);
      const text = await res.text();
      expect(text).toContain(`"categoryId":${categoryId}`);
    }
  });

  it.each([
    ["9223372036854775808", "categoryId"],
    ["-9223372036854775809", "categoryId"],
    ["1.5", "categoryId"],
    ["1e400", "categoryId"],
    ['"12"', "categoryId"],
  ])("refuses categoryId %s with 400 naming the field", async (value, field) => {
    const body = await expectError(await post(`{"name":"X","categoryId":${value}}`), 400, "invalid_request");
    expect(body.details?.map((d) => d.field)).toContain(field);
  });

  it("lists every offending field at once", async () => {
    const body = await expectError(await post(JSON.stringify({ name: 5, categoryId: "x", status: "lost", id: 3 })), 400, "invalid_request");
    expect(body.details?.map((d) => d.field).sort()).toEqual(["categoryId", "id", "name", "status"]);
  });

  it("passes the pet service's business rules through as 400 with details in the API's field names", async () => {
    const empty = await expectError(await post(JSON.stringify({ name: "   ", categoryId: 1 })), 400, "invalid_request");
    expect(empty.details).toEqual([{ field: "name", message: expect.stringMatching(/name/) }]);
    const zero = await expectError(await post(JSON.stringify({ name: "A", categoryId: 0 })), 400, "invalid_request");
    expect(zero.details).toEqual([{ field: "categoryId", message: "categoryId must be a positive integer, 1 to 9223372036854775807 (got 0)" }]);
    expect(zero.message).toMatch(/categoryId must be a positive integer/);
    expect(zero.message).not.toMatch(/required/);
    const negative = await expectError(await post(JSON.stringify({ name: "A", categoryId: -1 })), 400, "invalid_request");
    expect(negative.details).toEqual([{ field: "categoryId", message: expect.stringMatching(/^categoryId must be a positive integer/) }]);
    expect(negative.message).not.toMatch(/category_id/);
    const missing = await expectError(await post(JSON.stringify({})), 400, "invalid_request");
    expect(missing.details?.map((d) => d.field).sort()).toEqual(["categoryId", "name"]);
    const long = await expectError(await post(JSON.stringify({ name: "x".repeat(101), categoryId: 1 })), 400, "invalid_request");
    expect(long.details?.[0]?.field).toBe("name");
  });

  it("answers malformed JSON, non-object bodies and a missing body with 400", async () => {
    await expectError(await post("{not json"), 400, "invalid_request");
    await expectError(await post("[1,2]"), 400, "invalid_request");
    await expectError(await post("null"), 400, "invalid_request");
    await expectError(await api("/v1/pets", { method: "POST" }), 400, "invalid_request");
  });

  it("answers a body over the limit with 413 and a non-JSON body with 415", async () => {
    await expectError(await post(JSON.stringify({ name: "x".repeat(100_000), categoryId: 1 })), 413, "payload_too_large");
    await expectError(await post("name=Rex", { "Content-Type": "application/x-www-form-urlencoded" }), 415, "unsupported_media_type");
  });
});

describe("GET /v1/pets", () => {
  it("lists in ascending id order, honours limit and filters by status", async () => {
    for (const status of ["pending", "pending", "sold"]) {
      expect((await post(JSON.stringify({ name: `P-${status}`, categoryId: 2, status }))).status).toBe(201);
    }
    const all = await bodyOf(await api("/v1/pets?limit=100"));
    const ids = all.map((p: { id: number }) => p.id);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    expect(await bodyOf(await api("/v1/pets?limit=2"))).toHaveLength(2);
    const pending = await bodyOf(await api("/v1/pets?status=pending"));
    expect(pending.length).toBeGreaterThanOrEqual(2);
    expect(pending.every((p: { status: string }) => p.status === "pending")).toBe(true);
  });

  it("defaults to 20 pets", async () => {
    for (let i = 0; i < 21; i++) await post(JSON.stringify({ name: `Bulk ${i}`, categoryId: 3 }));
    expect(await bodyOf(await api("/v1/pets"))).toHaveLength(20);
  });

  it.each(["limit=0", "limit=101", "limit=abc", "limit=1&limit=2", "status=lost", "status=AVAILABLE", "limit=-1", "limit=1.5"])(
    "answers ?%s with 400 naming the parameter",
    async (query) => {
      const body = await expectError(await api(`/v1/pets?${query}`), 400, "invalid_request");
      expect(body.details?.[0]?.field).toBe(query.split("=")[0]);
    },
  );
});

describe("GET /v1/pets/{petId} (deprecated)", () => {
  const expectDeprecationHeaders = (res: Response) => {
    expect(res.headers.get("deprecation")).toMatch(/^@[0-9]+$/);
    expect(res.headers.get("sunset")).toBe("Thu, 05 Dec 2030 00:00:00 GMT");
    expect(res.headers.get("link")).toBe('</v1/pets>; rel="successor-version"');
  };

  it("marks every response deprecated: 200, 404, 400 and 401", async () => {
    const created = await bodyOf(await post(JSON.stringify({ name: "Old", categoryId: 1 })));
    const ok = await api(`/v1/pets/${created.id}`);
    expect(ok.status).toBe(200);
    expectDeprecationHeaders(ok);
    const missing = await api("/v1/pets/999999999");
    await expectError(missing, 404, "not_found");
    expectDeprecationHeaders(missing);
    const bad = await api("/v1/pets/abc");
    await expectError(bad, 400, "invalid_request");
    expectDeprecationHeaders(bad);
    const unauth = await api(`/v1/pets/${created.id}`, { auth: null });
    await expectError(unauth, 401, "unauthorized");
    expectDeprecationHeaders(unauth);
  });

  it("does not mark the other operations deprecated", async () => {
    const res = await api("/v1/pets");
    expect(res.headers.get("deprecation")).toBeNull();
    expect(res.headers.get("sunset")).toBeNull();
  });

  it.each(["0", "-1", "-9223372036854775808"])("answers petId %s, a valid int64 naming no pet, with 404 not_found", async (petId) => {
    const res = await api(`/v1/pets/${petId}`);
    await expectError(res, 404, "not_found");
    expectDeprecationHeaders(res);
  });

  it.each(["9223372036854775808", "1.0", "0x10", "-", "1%00"])("answers petId %s with 400", async (petId) => {
    await expectError(await api(`/v1/pets/${petId}`), 400, "invalid_request");
  });

  it("answers 410 gone from the sunset instant on", async () => {
    const saved = clock.now;
    try {
      clock.now = Date.UTC(2030, 11, 5) - 1;
      expect((await api("/v1/pets/1")).status).not.toBe(410);
      clock.now = Date.UTC(2030, 11, 5);
      const gone = await api("/v1/pets/1");
      await expectError(gone, 410, "gone");
      expectDeprecationHeaders(gone);
    } finally {
      clock.now = saved;
    }
  });
});

describe("errors Express would produce itself", () => {
  it("answers a wrong method on a known path with 405 and Allow", async () => {
    const del = await api("/v1/pets", { method: "DELETE" });
    await expectError(del, 405, "method_not_allowed");
    expect(del.headers.get("allow")).toBe("GET, HEAD, POST");
    const put = await api("/v1/pets/1", { method: "PUT" });
    await expectError(put, 405, "method_not_allowed");
    expect(put.headers.get("allow")).toBe("GET, HEAD");
  });

  it("answers unknown routes with 404 not_found, inside and outside /v1", async () => {
    await expectError(await api("/v1/orders"), 404, "not_found");
    await expectError(await api("/nope"), 404, "not_found");
    await expectError(await api("/v2/pets"), 404, "not_found");
  });

  it("answers broken percent-encoding with 400, never 500", async () => {
    await expectError(await api("/v1/pets/%E0%A4%A"), 400, "invalid_request");
  });
});

describe("authentication", () => {
  it.each([
    ["no header", null],
    ["a garbage token", "not-a-jwt"],
    ["an empty token", ""],
  ])("answers %s with 401 unauthorized and an Error body", async (_label, auth) => {
    const res = await fetch(`${gateway.url}/v1/pets`, { headers: auth === null ? {} : { Authorization: `Bearer ${auth}` } });
    await expectError(res, 401, "unauthorized");
  });

  it("answers a Basic scheme with 401", async () => {
    await expectError(await fetch(`${gateway.url}/v1/pets`, { headers: { Authorization: "Basic dXNlcjpwYXNz" } }), 401, "unauthorized");
  });
});

describe("every response", () => {
  it("carries a request id, echoing a sane caller-supplied one", async () => {
    const res = await api("/v1/pets", { headers: { "X-Request-Id": "abc-123" } });
    expect(res.headers.get("x-request-id")).toBe("abc-123");
    const generated = await api("/v1/pets", { headers: { "X-Request-Id": "bad id with spaces" } });
    expect(generated.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe("the API description", () => {
  it("is served at /v1/openapi.json without a key", async () => {
    const res = await fetch(`${gateway.url}/v1/openapi.json`);
    expect(res.status).toBe(200);
    const doc = await bodyOf(res);
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.paths["/pets/{petId}"].get.deprecated).toBe(true);
  });

  // Last in the file: every response the tests above observed matches the description.
  it("describes every response observed above", () => {
    expect(recorder.problems()).toEqual([]);
  });
});
