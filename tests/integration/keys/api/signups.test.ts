/** POST /v1/signups over real HTTP: a gateway's token makes Free keys and nothing else, five per client address a UTC day. */
import { describe, expect, it } from "vitest";
import { SIGNUPS_PER_ADDRESS_PER_DAY } from "../../../../keys/signups/signups.ts";
import { useCheckedAdminCalls } from "../../../../testkit/admin-openapi.ts";
import { useKeyService } from "../../../../testkit/key-service.ts";

const keyService = useKeyService();
const call = useCheckedAdminCalls(keyService);

async function tokenWith(name: string, scopes: string[]): Promise<string> {
  const made = await call("POST", "/v1/admin-tokens", { body: { name, scopes } });
  expect(made.status).toBe(201);
  return made.body.token as string;
}

describe("POST /v1/signups", () => {
  it("gives a gateway's token a Free key with the default scopes, owned by the e-mail, the form in its metadata; the key once", async () => {
    const gateway = await tokenWith("gateway-eu", ["gateway"]);
    const res = await call("POST", "/v1/signups", { token: gateway, body: { name: "  Ada Lovelace ", email: "ada@example.com", clientAddress: "203.0.113.7" } });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      name: "Ada Lovelace",
      plan: "free",
      ownerId: "ada@example.com",
      metadata: { name: "Ada Lovelace", email: "ada@example.com", signup: true },
      scopes: ["pets:read", "pets:write"],
      limits: { perMinute: 60, perDay: 1000 },
      revokedAt: null,
    });
    expect(res.body.key).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    const record = await call("GET", `/v1/keys/${res.body.id}`);
    expect(record.text).not.toContain(res.body.key);
    const events = await call("GET", "/v1/events?limit=1000");
    const created = events.body.items.find((e: { keyId: string }) => e.keyId === res.body.id);
    expect(created).toMatchObject({ type: "key.created", actor: "gateway-eu" });
    expect(events.text).not.toContain(res.body.key);
  });

  it("is the only key a gateway's token makes; other tokens need the gateway scope (admin has it)", async () => {
    const gateway = await tokenWith("gateway-us", ["gateway"]);
    expect((await call("POST", "/v1/keys", { token: gateway, body: { name: "k", plan: "free" } })).status).toBe(403);
    const writer = await tokenWith("writer", ["keys:write"]);
    const form = { name: "Bob", email: "bob@example.com", clientAddress: "198.51.100.1" };
    expect((await call("POST", "/v1/signups", { token: writer, body: form })).status).toBe(403);
    expect((await call("POST", "/v1/signups", { token: null, body: form })).status).toBe(401);
    expect((await call("POST", "/v1/signups", { body: form })).status).toBe(201);
  });

  it("refuses a bad form naming each field (400)", async () => {
    const bad = await call("POST", "/v1/signups", { body: { name: " ", email: "not-an-address", clientAddress: "somewhere", plan: "enterprise" } });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe("invalid_request");
    expect(bad.body.details.map((d: { field: string }) => d.field).sort()).toEqual(["clientAddress", "email", "name", "plan"]);
    const missing = await call("POST", "/v1/signups", { body: {} });
    expect(missing.body.details.map((d: { field: string }) => d.field).sort()).toEqual(["clientAddress", "email", "name"]);
  });

  it(`answers 429 rate_limited with Retry-After to the next UTC midnight past ${SIGNUPS_PER_ADDRESS_PER_DAY} a day from one address (an IPv6 /64 is one)`, async () => {
    const form = (i: number, clientAddress: string) => ({ body: { name: `Carol ${i}`, email: `carol${i}@example.com`, clientAddress } });
    for (let i = 0; i < SIGNUPS_PER_ADDRESS_PER_DAY; i++) expect((await call("POST", "/v1/signups", form(i, `2001:db8:aa:bb::${i + 1}`))).status).toBe(201);
    const refused = await call("POST", "/v1/signups", form(9, "2001:db8:aa:bb:ffff::9"));
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ code: "rate_limited", status: 429 });
    const retryAfter = Number(refused.headers.get("retry-after"));
    const now = Date.now();
    const midnight = Math.ceil((Math.floor(now / 86_400_000 + 1) * 86_400_000 - now) / 1000);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(Math.abs(retryAfter - midnight)).toBeLessThanOrEqual(5);
    // Nothing made for it; another network is counted apart.
    const owners = await call("GET", "/v1/keys?ownerId=carol9@example.com");
    expect(owners.body.items).toEqual([]);
    expect((await call("POST", "/v1/signups", form(10, "2001:db8:aa:cc::1"))).status).toBe(201);
  });
});
