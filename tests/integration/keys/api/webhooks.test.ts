/** /v1/webhooks over real HTTP: subscribe (the secret once), list and read without it, delete, deliveries; scopes and bad input. */
import { describe, expect, it } from "vitest";
import { useCheckedAdminCalls } from "../../../../testkit/admin-openapi.ts";
import { useKeyService } from "../../../../testkit/key-service.ts";

const keyService = useKeyService();
const call = useCheckedAdminCalls(keyService);

const tokenWith = async (name: string, scopes: string[]) => (await call("POST", "/v1/admin-tokens", { body: { name, scopes } })).body.token as string;

describe("webhook subscriptions", () => {
  it("subscribes (201 with a whsec_ secret shown once), lists and reads without it, deletes (204, then 404) with events that never carry it", async () => {
    const made = await call("POST", "/v1/webhooks", { body: { url: "http://127.0.0.1:9/hooks", events: ["key.created", "usage.threshold"] } });
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({ url: "http://127.0.0.1:9/hooks", events: ["key.created", "usage.threshold"] });
    expect(made.body.id).toMatch(/^wh_[A-Za-z0-9]+$/);
    expect(Buffer.from(made.body.secret.replace(/^whsec_/, ""), "base64")).toHaveLength(24);
    const listed = await call("GET", "/v1/webhooks");
    expect(listed.body.items).toEqual([{ id: made.body.id, url: made.body.url, events: made.body.events, createdAt: made.body.createdAt }]);
    const read = await call("GET", `/v1/webhooks/${made.body.id}`);
    expect(read.body).toEqual(listed.body.items[0]);
    expect(listed.text + read.text).not.toContain(made.body.secret.slice(6));
    expect((await call("GET", `/v1/webhooks/${made.body.id}/deliveries`)).body).toEqual({ items: [], nextCursor: null });
    expect((await call("DELETE", `/v1/webhooks/${made.body.id}`)).status).toBe(204);
    expect((await call("DELETE", `/v1/webhooks/${made.body.id}`)).status).toBe(404);
    expect((await call("GET", `/v1/webhooks/${made.body.id}`)).status).toBe(404);
    expect((await call("GET", `/v1/webhooks/${made.body.id}/deliveries`)).status).toBe(404);
    expect((await call("GET", "/v1/webhooks")).body.items).toEqual([]);
    const events = await call("GET", "/v1/events?limit=1000");
    const mine = events.body.items.filter((e: { changes: { id?: string } }) => e.changes.id === made.body.id);
    expect(mine.map((e: { type: string; actor: string }) => [e.type, e.actor])).toEqual([
      ["webhook.created", "bootstrap"],
      ["webhook.deleted", "bootstrap"],
    ]);
    expect(events.text).not.toContain(made.body.secret.slice(6));
  });

  it("refuses bad input naming each field (400): a URL not http(s), unknown or repeated event types, unknown fields", async () => {
    const bad = await call("POST", "/v1/webhooks", { body: { url: "ftp://example.com/x", events: ["key.created", "key.deleted"], extra: true } });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe("invalid_request");
    expect(bad.body.details.map((d: { field: string }) => d.field).sort()).toEqual(["events.1", "extra", "url"]);
    const empty = await call("POST", "/v1/webhooks", { body: { url: "not a url", events: [] } });
    expect(empty.body.details.map((d: { field: string }) => d.field).sort()).toEqual(["events", "url"]);
    const repeated = await call("POST", "/v1/webhooks", { body: { url: "https://hooks.example/x", events: ["key.created", "key.created"] } });
    expect(repeated.body.details).toEqual([{ field: "events", message: "must not repeat an event type" }]);
    expect((await call("GET", "/v1/webhooks/not-an-id")).status).toBe(400);
    expect((await call("GET", "/v1/webhooks/wh_missing/deliveries?limit=0")).body.details.map((d: { field: string }) => d.field)).toEqual(["query.limit"]);
  });

  it("needs webhooks:read to read and webhooks:write to change (403 otherwise; 401 with no token)", async () => {
    const reader = await tokenWith("hooks-reader", ["webhooks:read"]);
    const keysOnly = await tokenWith("keys-only", ["keys:read", "keys:write"]);
    const writer = await tokenWith("hooks-writer", ["webhooks:write"]);
    const body = { url: "https://hooks.example/in", events: ["key.revoked"] };
    expect((await call("POST", "/v1/webhooks", { token: reader, body })).status).toBe(403);
    expect((await call("POST", "/v1/webhooks", { token: keysOnly, body })).status).toBe(403);
    const made = await call("POST", "/v1/webhooks", { token: writer, body });
    expect(made.status).toBe(201);
    expect((await call("GET", "/v1/webhooks", { token: reader })).status).toBe(200);
    expect((await call("GET", "/v1/webhooks", { token: keysOnly })).status).toBe(403);
    expect((await call("GET", "/v1/webhooks", { token: null })).status).toBe(401);
    expect((await call("DELETE", `/v1/webhooks/${made.body.id}`, { token: reader })).status).toBe(403);
    expect((await call("DELETE", `/v1/webhooks/${made.body.id}`, { token: writer })).status).toBe(204);
  });
});
