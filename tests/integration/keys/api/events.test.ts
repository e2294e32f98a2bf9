/**
 * GET /v1/events over real HTTP: paging by seq, and the long poll answered as soon as a row
 * arrives, whoever wrote it (this service, or another registry handle on the same SQLite file as
 * the command line would).
 */
import { describe, expect, it } from "vitest";
import { createKeyOperations } from "../../../../keys/operations/index.ts";
import { openRegistry } from "../../../../keys/registry/open.ts";
import { useCheckedAdminCalls } from "../../../../testkit/admin-openapi.ts";
import { useKeyService } from "../../../../testkit/key-service.ts";

const keyService = useKeyService();
const call = useCheckedAdminCalls(keyService);

async function head(): Promise<number> {
  let after = 0;
  for (;;) {
    const page = await call("GET", `/v1/events?after=${after}&limit=1000`);
    if (page.body.items.length === 0) return after;
    after = page.body.items.at(-1).seq;
  }
}

describe("GET /v1/events", () => {
  it("pages oldest first by seq: nextCursor while a page is full, never a token in a change", async () => {
    const created = await call("POST", "/v1/keys", { body: { name: "Audited", plan: "free" } });
    await call("PATCH", `/v1/keys/${created.body.id}`, { body: { name: "Audited twice" } });
    await call("POST", `/v1/keys/${created.body.id}/roll`);
    await call("POST", `/v1/keys/${created.body.id}/revoke`);
    const all: { seq: number; type: string; actor: string; keyId: string | null }[] = [];
    let after = 0;
    for (;;) {
      const page = await call("GET", `/v1/events?after=${after}&limit=2`);
      expect(page.status).toBe(200);
      all.push(...page.body.items);
      expect(page.text).not.toContain(created.body.key);
      if (page.body.nextCursor === null) break;
      expect(page.body.nextCursor).toBe(String(page.body.items.at(-1).seq));
      after = Number(page.body.nextCursor);
    }
    expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i + 1));
    const mine = all.filter((e) => e.keyId === created.body.id);
    expect(mine.map((e) => e.type)).toEqual(["key.created", "key.updated", "key.rolled", "key.revoked"]);
    expect(new Set(mine.map((e) => e.actor))).toEqual(new Set(["bootstrap"]));
    expect(all[0]!.type).toBe("admin_token.created");
  });

  it("answers an empty page at once without wait, and after `wait` seconds with it", async () => {
    const after = await head();
    const now = await call("GET", `/v1/events?after=${after}`);
    expect(now.body).toEqual({ items: [], nextCursor: null });
    const started = Date.now();
    const waited = await call("GET", `/v1/events?after=${after}&wait=1`);
    expect(waited.body).toEqual({ items: [], nextCursor: null });
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  it("answers a long poll as soon as this service writes an event", async () => {
    const after = await head();
    const started = Date.now();
    const polled = call("GET", `/v1/events?after=${after}&wait=20`);
    await new Promise((r) => setTimeout(r, 300));
    const created = await call("POST", "/v1/keys", { body: { name: "Wakes", plan: "free" } });
    const answer = await polled;
    expect(answer.body.items.map((e: { keyId: string }) => e.keyId)).toEqual([created.body.id]);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("answers a long poll within a second of a row written by another process's registry handle (the command line)", async () => {
    const after = await head();
    const cli = await openRegistry(keyService().db);
    try {
      const operations = createKeyOperations({ registry: cli, keysDir: keyService().keysDir, clock: Date.now });
      const polled = call("GET", `/v1/events?after=${after}&wait=20`);
      await new Promise((r) => setTimeout(r, 300));
      const written = Date.now();
      const created = await operations.create({ name: "From the CLI", plan: "pro" }, "cli");
      const answer = await polled;
      const waitedMs = Date.now() - written;
      expect(answer.body.items).toEqual([expect.objectContaining({ type: "key.created", keyId: created.record.id, actor: "cli" })]);
      expect(waitedMs).toBeLessThan(1_000);
    } finally {
      await cli.close();
    }
  });

  it("refuses bad parameters naming them, no token (401), a token without keys:read or gateway (403)", async () => {
    const bad = await call("GET", "/v1/events?after=-1&limit=0&wait=31");
    expect(bad.status).toBe(400);
    expect(bad.body.details.map((d: { field: string }) => d.field).sort()).toEqual(["query.after", "query.limit", "query.wait"]);
    expect((await call("GET", "/v1/events", { token: null })).status).toBe(401);
    const writer = await call("POST", "/v1/admin-tokens", { body: { name: "writer-only", scopes: ["keys:write"] } });
    expect((await call("GET", "/v1/events", { token: writer.body.token })).status).toBe(403);
    const gateway = await call("POST", "/v1/admin-tokens", { body: { name: "a-gateway", scopes: ["gateway"] } });
    expect((await call("GET", "/v1/events", { token: gateway.body.token })).status).toBe(200);
  });
});
