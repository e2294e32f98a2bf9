/**
 * The admin API's keys resource over real HTTP, on a real SQLite registry: every operation's
 * success and its refusals, each answer checked against keys/api/openapi.json.
 */
import { afterAll, describe, expect, it } from "vitest";
import { adminApi } from "../../../../testkit/admin-openapi.ts";
import { adminRequest, useKeyService } from "../../../../testkit/key-service.ts";

const keyService = useKeyService();
const recorder = () => adminApi.recordingFetch(keyService().url);
let recording: ReturnType<typeof recorder> | undefined;

/** A request as the bootstrap admin (unless `token` says otherwise), checked against the description. */
function call(method: string, path: string, opts: { token?: string | null; body?: unknown; headers?: Record<string, string> } = {}) {
  recording ??= recorder();
  return adminRequest(keyService().url, method, path, { token: keyService().adminToken, ...opts, fetchImpl: recording.fetch });
}

async function tokenWith(scopes: string[]): Promise<string> {
  const made = await call("POST", "/v1/admin-tokens", { body: { name: `t-${scopes.join("-")}-${Math.random().toString(36).slice(2, 8)}`, scopes } });
  expect(made.status).toBe(201);
  return made.body.token;
}

afterAll(() => {
  expect(recording?.problems() ?? []).toEqual([]);
});

describe("POST /v1/keys", () => {
  it("creates a key: 201, the record with defaults, and the token, once", async () => {
    const res = await call("POST", "/v1/keys", { body: { name: "Acme checkout", plan: "pro", ownerId: "cust_42", metadata: { tier: "gold" } } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      name: "Acme checkout",
      plan: "pro",
      ownerId: "cust_42",
      metadata: { tier: "gold" },
      limits: { perMinute: 300, perDay: 10_000 },
      scopes: ["pets:read", "pets:write"],
      allowedCidrs: [],
      expiresAt: null,
      revokedAt: null,
      generation: 0,
      lastUsedAt: null,
    });
    expect(res.body.key.split(".")).toHaveLength(3);
    const got = await call("GET", `/v1/keys/${res.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body).not.toHaveProperty("key");
    expect(got.text).not.toContain(res.body.key);
  });

  it("creates an enterprise key with its limits, scopes, networks and expiry", async () => {
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
    const res = await call("POST", "/v1/keys", {
      body: { name: "Big", plan: "enterprise", perMinute: 5000, perDay: 1_000_000, scopes: ["pets:read"], allowedCidrs: ["203.0.113.0/24", "2001:db8::/32"], expiresAt },
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ plan: "enterprise", limits: { perMinute: 5000, perDay: 1_000_000 }, scopes: ["pets:read"], allowedCidrs: ["203.0.113.0/24", "2001:db8::/32"], expiresAt });
  });

  it("refuses bad input with 400 invalid_request naming each field", async () => {
    const res = await call("POST", "/v1/keys", { body: { plan: "gold", perMinute: -1, color: "red" } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe("invalid_request");
    const fields = res.body.details.map((d: { field: string }) => d.field);
    expect(fields).toEqual(expect.arrayContaining(["name", "plan", "perMinute", "color"]));
  });

  it("refuses limits on a plan that has its own, and enterprise without them, as the CLI does", async () => {
    const pro = await call("POST", "/v1/keys", { body: { name: "x", plan: "pro", perMinute: 10, perDay: 100 } });
    expect(pro.status).toBe(400);
    const enterprise = await call("POST", "/v1/keys", { body: { name: "x", plan: "enterprise" } });
    expect(enterprise.status).toBe(400);
    expect(enterprise.body.details.map((d: { field: string }) => d.field)).toEqual(expect.arrayContaining(["perMinute"]));
  });

  it("refuses bad CIDRs, unknown scopes and a past expiry, naming them", async () => {
    const res = await call("POST", "/v1/keys", {
      body: { name: "x", plan: "free", allowedCidrs: ["10.0.0.0/33"], scopes: ["pets:delete"], expiresAt: "2001-01-01T00:00:00Z" },
    });
    expect(res.status).toBe(400);
    const fields = res.body.details.map((d: { field: string }) => d.field).join(" ");
    expect(fields).toMatch(/allowedCidrs/);
    expect(fields).toMatch(/scopes/);
    expect(fields).toMatch(/expiresAt/);
  });

  it("answers 400 for a body that is not JSON, 415 for another media type, 413 for a huge one", async () => {
    expect((await call("POST", "/v1/keys", { body: "{not json" })).status).toBe(400);
    const text = await call("POST", "/v1/keys", { body: "name=x", headers: { "Content-Type": "text/plain" } });
    expect(text.status).toBe(415);
    expect(text.body.code).toBe("unsupported_media_type");
    const huge = await call("POST", "/v1/keys", { body: { name: "x", plan: "free", metadata: { blob: "x".repeat(20_000) } } });
    expect(huge.status).toBe(413);
    expect(huge.body.code).toBe("payload_too_large");
  });

  it("needs a token (401 with WWW-Authenticate: Bearer) with keys:write (403)", async () => {
    const none = await call("POST", "/v1/keys", { token: null, body: { name: "x", plan: "free" } });
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toMatch(/^Bearer/);
    const wrong = await call("POST", "/v1/keys", { token: `pskadm_${"A".repeat(43)}`, body: { name: "x", plan: "free" } });
    expect(wrong.status).toBe(401);
    const reader = await tokenWith(["keys:read"]);
    const forbidden = await call("POST", "/v1/keys", { token: reader, body: { name: "x", plan: "free" } });
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.code).toBe("forbidden");
  });
});

describe("Idempotency-Key", () => {
  it("replays the first answer for the same key and body, 422 for another body", async () => {
    const headers = { "Idempotency-Key": "6f1c2e0a-create-1" };
    const first = await call("POST", "/v1/keys", { body: { name: "Once", plan: "free" }, headers });
    expect(first.status).toBe(201);
    const again = await call("POST", "/v1/keys", { body: { plan: "free", name: "Once" }, headers });
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    const other = await call("POST", "/v1/keys", { body: { name: "Twice", plan: "free" }, headers });
    expect(other.status).toBe(422);
    expect(other.body.code).toBe("idempotency_key_reused");
    const listed = await call("GET", "/v1/keys?limit=100");
    expect(listed.body.items.filter((k: { name: string }) => k.name === "Once")).toHaveLength(1);
  });

  it("keeps keys per admin token, and refuses a malformed one with 400", async () => {
    const headers = { "Idempotency-Key": "shared-key" };
    const writer = await tokenWith(["keys:write"]);
    const a = await call("POST", "/v1/keys", { body: { name: "A", plan: "free" }, headers });
    const b = await call("POST", "/v1/keys", { token: writer, body: { name: "A", plan: "free" }, headers });
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(b.body.id).not.toBe(a.body.id);
    const bad = await call("POST", "/v1/keys", { body: { name: "A", plan: "free" }, headers: { "Idempotency-Key": "x".repeat(256) } });
    expect(bad.status).toBe(400);
    expect(bad.body.details[0].field).toBe("header.Idempotency-Key");
  });
});

describe("GET /v1/keys and /v1/keys/{id}", () => {
  it("pages with a cursor and filters by owner, plan and state", async () => {
    const owner = `owner-${Date.now()}`;
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await call("POST", "/v1/keys", { body: { name: `p${i}`, plan: i < 3 ? "free" : "business", ownerId: owner } })).body.id);
    await call("POST", `/v1/keys/${ids[0]}/revoke`);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Awaited<ReturnType<typeof call>> = await call("GET", `/v1/keys?limit=2&ownerId=${owner}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      expect(page.status).toBe(200);
      expect(page.body.items.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.items.map((k: { id: string }) => k.id));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual(ids);
    const business = await call("GET", `/v1/keys?ownerId=${owner}&plan=business`);
    expect(business.body.items.map((k: { id: string }) => k.id)).toEqual(ids.slice(3));
    const revoked = await call("GET", `/v1/keys?ownerId=${owner}&state=revoked`);
    expect(revoked.body.items.map((k: { id: string }) => k.id)).toEqual([ids[0]]);
  });

  it("refuses bad query parameters naming them, and a forged cursor", async () => {
    const res = await call("GET", "/v1/keys?limit=0&state=gone&plan=gold&colour=red");
    expect(res.status).toBe(400);
    expect(res.body.details.map((d: { field: string }) => d.field).sort()).toEqual(["query.colour", "query.limit", "query.plan", "query.state"]);
    const forged = await call("GET", "/v1/keys?cursor=bm90LWEtY3Vyc29y");
    expect(forged.status).toBe(400);
    expect(forged.body.details[0].field).toBe("query.cursor");
  });

  it("answers 404 for an unknown key, 400 for a malformed id, 401/403 without keys:read", async () => {
    expect((await call("GET", "/v1/keys/key_0000000000000000")).status).toBe(404);
    const malformed = await call("GET", `/v1/keys/${encodeURIComponent("a b")}`);
    expect(malformed.status).toBe(400);
    expect(malformed.body.details[0].field).toBe("path.id");
    expect((await call("GET", "/v1/keys", { token: null })).status).toBe(401);
    const gateway = await tokenWith(["gateway"]);
    expect((await call("GET", "/v1/keys", { token: gateway })).status).toBe(403);
  });
});

describe("PATCH /v1/keys/{id}", () => {
  it("applies a JSON Merge Patch: left out kept, null cleared, metadata merged", async () => {
    const created = await call("POST", "/v1/keys", {
      body: { name: "Patchy", plan: "free", ownerId: "o1", metadata: { a: 1, b: 2 }, scopes: ["pets:read"], allowedCidrs: ["10.0.0.0/8"], expiresAt: new Date(Date.now() + 3_600_000).toISOString() },
    });
    const id = created.body.id;
    const patched = await call("PATCH", `/v1/keys/${id}`, {
      body: { name: "Patched", metadata: { b: null, c: 3 } },
      headers: { "Content-Type": "application/merge-patch+json" },
    });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ name: "Patched", ownerId: "o1", metadata: { a: 1, c: 3 }, scopes: ["pets:read"], allowedCidrs: ["10.0.0.0/8"] });
    const cleared = await call("PATCH", `/v1/keys/${id}`, {
      body: { metadata: null, allowedCidrs: null, expiresAt: null, ownerId: null, scopes: null },
      headers: { "Content-Type": "application/merge-patch+json" },
    });
    expect(cleared.status).toBe(200);
    expect(cleared.body).toMatchObject({ metadata: {}, allowedCidrs: [], expiresAt: null, ownerId: null, scopes: ["pets:read", "pets:write"], name: "Patched" });
  });

  it("changes the plan: a plan's own limits, or enterprise with limits", async () => {
    const id = (await call("POST", "/v1/keys", { body: { name: "Up", plan: "free" } })).body.id;
    const business = await call("PATCH", `/v1/keys/${id}`, { body: { plan: "business" } });
    expect(business.body.limits).toEqual({ perMinute: 1000, perDay: 100_000 });
    const enterprise = await call("PATCH", `/v1/keys/${id}`, { body: { plan: "enterprise", perMinute: 7, perDay: 70 } });
    expect(enterprise.body).toMatchObject({ plan: "enterprise", limits: { perMinute: 7, perDay: 70 } });
    const refused = await call("PATCH", `/v1/keys/${id}`, { body: { plan: "pro", perMinute: 7 } });
    expect(refused.status).toBe(400);
  });

  it("refuses unknown fields (400), a revoked key (409), an unknown key (404), a text body (415)", async () => {
    const id = (await call("POST", "/v1/keys", { body: { name: "Gone", plan: "free" } })).body.id;
    const unknown = await call("PATCH", `/v1/keys/${id}`, { body: { colour: "red" } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.details[0].field).toBe("colour");
    await call("POST", `/v1/keys/${id}/revoke`);
    const conflict = await call("PATCH", `/v1/keys/${id}`, { body: { name: "Back" } });
    expect(conflict.status).toBe(409);
    expect(conflict.body.code).toBe("conflict");
    expect((await call("PATCH", "/v1/keys/key_ffffffffffffffff", { body: { name: "x" } })).status).toBe(404);
    expect((await call("PATCH", `/v1/keys/${id}`, { body: "name", headers: { "Content-Type": "text/plain" } })).status).toBe(415);
  });
});

describe("roll, revoke, usage", () => {
  it("rolls: 201, a new token, generation + 1; revoked keys cannot roll (409)", async () => {
    const created = await call("POST", "/v1/keys", { body: { name: "Roll", plan: "pro" } });
    const rolled = await call("POST", `/v1/keys/${created.body.id}/roll`, { body: { graceSeconds: 60 } });
    expect(rolled.status).toBe(201);
    expect(rolled.body.generation).toBe(1);
    expect(rolled.body.key).not.toBe(created.body.key);
    const defaultGrace = await call("POST", `/v1/keys/${created.body.id}/roll`);
    expect(defaultGrace.status).toBe(201);
    expect((await call("POST", `/v1/keys/${created.body.id}/roll`, { body: { graceSeconds: 31 * 86_400 } })).status).toBe(400);
    await call("POST", `/v1/keys/${created.body.id}/revoke`);
    expect((await call("POST", `/v1/keys/${created.body.id}/roll`)).status).toBe(409);
    expect((await call("POST", "/v1/keys/key_ffffffffffffffff/roll")).status).toBe(404);
  });

  it("revokes: 200 with revokedAt; twice: 200, the same revokedAt", async () => {
    const id = (await call("POST", "/v1/keys", { body: { name: "Rev", plan: "free" } })).body.id;
    const first = await call("POST", `/v1/keys/${id}/revoke`);
    expect(first.status).toBe(200);
    expect(first.body.revokedAt).not.toBeNull();
    const second = await call("POST", `/v1/keys/${id}/revoke`);
    expect(second.body.revokedAt).toBe(first.body.revokedAt);
    expect((await call("POST", "/v1/keys/key_ffffffffffffffff/revoke")).status).toBe(404);
    const reader = await tokenWith(["keys:read"]);
    expect((await call("POST", `/v1/keys/${id}/revoke`, { token: reader })).status).toBe(403);
  });

  it("reports usage as `keys usage --json`: nothing used yet", async () => {
    const id = (await call("POST", "/v1/keys", { body: { name: "Use", plan: "free" } })).body.id;
    const usage = await call("GET", `/v1/keys/${id}/usage`);
    expect(usage.status).toBe(200);
    expect(usage.body).toEqual({
      keyId: id,
      plan: "free",
      limits: { perMinute: 60, perDay: 1000 },
      used: { minute: 0, day: 0 },
      remaining: { minute: 60, day: 1000 },
      banned: false,
      bannedUntil: null,
      lastUsedAt: null,
    });
    expect((await call("GET", "/v1/keys/key_ffffffffffffffff/usage")).status).toBe(404);
    expect((await call("GET", `/v1/keys/${id}/usage`, { token: null })).status).toBe(401);
  });
});

describe("unknown paths and methods", () => {
  it("answers 404 not_found and 405 with Allow", async () => {
    const missing = await call("GET", "/v1/nothing");
    expect(missing.status).toBe(404);
    expect(missing.body.code).toBe("not_found");
    const method = await call("DELETE", "/v1/keys");
    expect(method.status).toBe(405);
    expect(method.headers.get("allow")).toBe("POST, GET, HEAD");
  });
});
