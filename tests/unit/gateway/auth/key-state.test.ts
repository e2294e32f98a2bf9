import { describe, expect, it } from "vitest";
import { createKeyState } from "../../../../gateway/auth/key-state.ts";
import type { EventType } from "../../../../lib/key-record.ts";

const AT = "2030-01-01T00:00:00.000Z";

describe("gateway/auth/key-state.ts", () => {
  it("builds each key's state from its events: created, updated (plan, limits), rolled, revoked; other events change nothing", () => {
    const state = createKeyState();
    let seq = 0;
    const apply = (type: EventType, keyId: string | null, changes: Record<string, unknown>) => state.apply({ seq: ++seq, at: AT, actor: "t", type, keyId, changes });
    apply("key.created", "key_a", { plan: "free", limits: { perMinute: 60, perDay: 1000 }, scopes: ["pets:read", "pets:write"], allowedCidrs: [], expiresAt: null, revokedAt: null, generation: 0 });
    const created = state.get("key_a")!;
    expect(created).toMatchObject({ plan: "free", limits: { perMinute: 60, perDay: 1000 }, revokedAt: null, generation: 0, allowsAddress: undefined });
    apply("key.updated", "key_a", { plan: "enterprise", limits: { perMinute: 7, perDay: 70 } });
    expect(state.get("key_a")).not.toBe(created); // a new object: callers cache per entry
    expect(state.get("key_a")).toMatchObject({ plan: "enterprise", limits: { perMinute: 7, perDay: 70 } });
    apply("key.rolled", "key_a", { generation: 1, graceUntil: { "0": "2030-01-02T00:00:00.000Z" }, kid: "k2" });
    expect(state.get("key_a")).toMatchObject({ generation: 1, graceUntil: { "0": Date.parse("2030-01-02T00:00:00.000Z") } });
    apply("admin_token.created", null, { name: "x" });
    apply("key.revoked", "key_a", { revokedAt: AT });
    expect(state.get("key_a")).toMatchObject({ plan: "enterprise", revokedAt: Date.parse(AT) });
    expect(state.size()).toBe(1);
    expect(state.loaded()).toBe(false);
    state.markLoaded();
    expect(state.loaded()).toBe(true);
  });

  it("whenKnown resolves as soon as the key's first event arrives, or undefined after the timeout", async () => {
    const state = createKeyState();
    const pending = state.whenKnown("key_new", 5_000);
    state.apply({ seq: 1, at: AT, actor: "t", type: "key.created", keyId: "key_new", changes: { plan: "pro" } });
    expect(await pending).toMatchObject({ plan: "pro" });
    expect(await state.whenKnown("key_new", 0)).toBe(state.get("key_new"));
    expect(await state.whenKnown("key_never", 10)).toBeUndefined();
  });
});
