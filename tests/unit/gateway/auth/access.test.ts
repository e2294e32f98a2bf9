import { describe, expect, it } from "vitest";
import { accessDenial, insufficientScopeChallenge, requiredScope } from "../../../../gateway/auth/access.ts";
import { createKeyState, type KeyEntry } from "../../../../gateway/auth/key-state.ts";

/** A key's state after its key.created event with these fields. */
function entry(changes: Record<string, unknown>): KeyEntry {
  const state = createKeyState();
  state.apply({ seq: 1, at: "2030-01-01T00:00:00.000Z", actor: "test", type: "key.created", keyId: "key_a", changes });
  return state.get("key_a")!;
}

describe("gateway/auth/access.ts", () => {
  it("GET and HEAD need pets:read, every other method pets:write", () => {
    expect(["GET", "HEAD"].map(requiredScope)).toEqual(["pets:read", "pets:read"]);
    expect(["POST", "PUT", "DELETE", "PATCH"].map(requiredScope)).toEqual(Array(4).fill("pets:write"));
  });

  it("refuses an operation outside the key's scopes, naming the scope it needs", () => {
    const readOnly = entry({ scopes: ["pets:read"], allowedCidrs: [] });
    expect(accessDenial(readOnly, "GET", "203.0.113.9")).toBeUndefined();
    expect(accessDenial(readOnly, "POST", "203.0.113.9")).toEqual({ reason: "scope", scope: "pets:write" });
    expect(accessDenial(entry({ scopes: [] }), "GET", "203.0.113.9")).toEqual({ reason: "scope", scope: "pets:read" });
    expect(insufficientScopeChallenge("pets:write")).toBe('Bearer error="insufficient_scope", scope="pets:write"');
  });

  it("refuses a client address outside the key's allowed networks, before looking at scopes", () => {
    const office = entry({ scopes: ["pets:read"], allowedCidrs: ["198.51.100.0/24", "2001:db8::/32"] });
    expect(accessDenial(office, "GET", "198.51.100.20")).toBeUndefined();
    expect(accessDenial(office, "GET", "::ffff:198.51.100.20")).toBeUndefined();
    expect(accessDenial(office, "GET", "2001:db8::1")).toBeUndefined();
    expect(accessDenial(office, "POST", "203.0.113.9")).toEqual({ reason: "network" });
    expect(accessDenial(office, "GET", undefined)).toEqual({ reason: "network" });
  });

  it("lets through a key whose scopes and networks were cleared (null: both scopes, anywhere)", () => {
    const state = createKeyState();
    const at = "2030-01-01T00:00:00.000Z";
    state.apply({ seq: 1, at, actor: "t", type: "key.created", keyId: "key_b", changes: { scopes: ["pets:read"], allowedCidrs: ["10.0.0.0/8"] } });
    state.apply({ seq: 2, at, actor: "t", type: "key.updated", keyId: "key_b", changes: { scopes: null, allowedCidrs: null } });
    expect(accessDenial(state.get("key_b")!, "POST", "203.0.113.9")).toBeUndefined();
  });
});
