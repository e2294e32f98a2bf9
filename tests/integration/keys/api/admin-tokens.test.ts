/** Admin tokens over real HTTP: made with scopes, shown once, listed without secrets, revoked for every request after. */
import { describe, expect, it } from "vitest";
import { hashAdminToken } from "../../../../keys/admin-tokens/tokens.ts";
import { useCheckedAdminCalls } from "../../../../testkit/admin-openapi.ts";
import { useKeyService } from "../../../../testkit/key-service.ts";

const keyService = useKeyService();
const call = useCheckedAdminCalls(keyService);

describe("admin tokens", () => {
  it("creates one (201, the token once), lists them without token or hash, and its scopes hold", async () => {
    const made = await call("POST", "/v1/admin-tokens", { body: { name: "signup-backend", scopes: ["keys:read", "keys:write"] } });
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({ name: "signup-backend", scopes: ["keys:read", "keys:write"], revokedAt: null });
    expect(made.body.token).toMatch(/^pskadm_[A-Za-z0-9_-]{43}$/);
    const listed = await call("GET", "/v1/admin-tokens");
    expect(listed.status).toBe(200);
    expect(listed.body.nextCursor).toBeNull();
    expect(listed.body.items.map((t: { name: string }) => t.name)).toEqual(["bootstrap", "signup-backend"]);
    expect(listed.text).not.toContain(made.body.token);
    expect(listed.text).not.toContain(hashAdminToken(made.body.token));
    // keys:write creates keys; admin tokens need admin.
    expect((await call("POST", "/v1/keys", { token: made.body.token, body: { name: "k", plan: "free" } })).status).toBe(201);
    expect((await call("GET", "/v1/admin-tokens", { token: made.body.token })).status).toBe(403);
  });

  it("revokes one: 200, 401 from its next request, and revoking again answers the same record", async () => {
    const made = await call("POST", "/v1/admin-tokens", { body: { name: "short-lived", scopes: ["admin"] } });
    expect((await call("GET", "/v1/keys", { token: made.body.token })).status).toBe(200);
    const revoked = await call("POST", `/v1/admin-tokens/${made.body.id}/revoke`);
    expect(revoked.status).toBe(200);
    expect(revoked.body.revokedAt).not.toBeNull();
    const refused = await call("GET", "/v1/keys", { token: made.body.token });
    expect(refused.status).toBe(401);
    expect(refused.headers.get("www-authenticate")).toMatch(/^Bearer/);
    const again = await call("POST", `/v1/admin-tokens/${made.body.id}/revoke`);
    expect(again.body.revokedAt).toBe(revoked.body.revokedAt);
    const events = await call("GET", "/v1/events?limit=1000");
    const types = events.body.items.filter((e: { changes: { id?: string } }) => e.changes.id === made.body.id).map((e: { type: string }) => e.type);
    expect(types).toEqual(["admin_token.created", "admin_token.revoked"]);
    expect(events.text).not.toContain(made.body.token);
  });

  it("refuses a taken name (409), bad input naming fields (400), unknown ids (404), non-admins (403)", async () => {
    expect((await call("POST", "/v1/admin-tokens", { body: { name: "bootstrap", scopes: ["admin"] } })).status).toBe(409);
    const bad = await call("POST", "/v1/admin-tokens", { body: { name: "", scopes: ["root"], extra: 1 } });
    expect(bad.status).toBe(400);
    expect(bad.body.details.map((d: { field: string }) => d.field).sort()).toEqual(["extra", "name", "scopes.0"]);
    expect((await call("POST", "/v1/admin-tokens/adm_doesnotexist/revoke")).status).toBe(404);
    expect((await call("POST", "/v1/admin-tokens/not-an-id/revoke")).status).toBe(400);
    const reader = await call("POST", "/v1/admin-tokens", { body: { name: "reader", scopes: ["keys:read"] } });
    expect((await call("POST", "/v1/admin-tokens", { token: reader.body.token, body: { name: "x", scopes: ["admin"] } })).status).toBe(403);
    expect((await call("GET", "/v1/admin-tokens", { token: null })).status).toBe(401);
  });
});

describe("what needs no token", () => {
  it("serves the JWKS: every public key of KEYS_DIR as an EC P-256 JWK", async () => {
    const res = await call("GET", "/.well-known/jwks.json", { token: null });
    expect(res.status).toBe(200);
    expect(res.body.keys).toHaveLength(1);
    expect(res.body.keys[0]).toMatchObject({ kty: "EC", crv: "P-256", alg: "ES256", use: "sig" });
    expect(res.body.keys[0]).not.toHaveProperty("d");
  });

  it("answers /healthz, /readyz and /metrics", async () => {
    expect((await call("GET", "/healthz", { token: null })).body).toEqual({ status: "ok" });
    expect((await call("GET", "/readyz", { token: null })).body).toEqual({ status: "ready" });
    const metrics = await call("GET", "/metrics", { token: null });
    expect(metrics.status).toBe(200);
    expect(metrics.text).toMatch(/keys_http_requests_total\{route="\/v1\/admin-tokens",method="GET",status="200"\}/);
    expect(metrics.text).toMatch(/keys_events_head_seq \d+/);
  });

  it("serves its OpenAPI description and the docs page from this origin only", async () => {
    const description = await call("GET", "/openapi.json", { token: null });
    expect(description.body.openapi).toBe("3.1.0");
    expect(Object.keys(description.body.paths)).toContain("/v1/keys");
    const page = await fetch(`${keyService().url}/docs`);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain("admin API");
    expect(html).not.toMatch(/https?:\/\//);
    const init = await (await fetch(`${keyService().url}/docs/init.js`)).text();
    expect(init).toContain('"/openapi.json"');
    expect((await fetch(`${keyService().url}/docs/swagger-ui-bundle.js`)).status).toBe(200);
  });
});
