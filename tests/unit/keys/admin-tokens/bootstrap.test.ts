import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ensureBootstrapToken } from "../../../../keys/admin-tokens/bootstrap.ts";
import { ADMIN_TOKEN_PATTERN, allowsAny, generateAdminToken, hashAdminToken } from "../../../../keys/admin-tokens/tokens.ts";
import { useKeyRegistry, useTempKeysDir } from "../../../../testkit/keys.ts";

const dir = useTempKeysDir();
const registry = useKeyRegistry(dir);
const clock = () => Date.now();

describe("the bootstrap admin token", () => {
  it("is generated once, saved 0600, stored only as its hash, with one event", async () => {
    const file = path.join(dir(), "data", "admin-token");
    const first = await ensureBootstrapToken(registry(), { configured: undefined, file, clock });
    const again = await ensureBootstrapToken(registry(), { configured: undefined, file, clock });
    expect(first.token).toMatch(ADMIN_TOKEN_PATTERN);
    expect(again).toEqual(first);
    expect(readFileSync(file, "utf8").trim()).toBe(first.token);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const tokens = await registry().listAdminTokens();
    expect(tokens).toEqual([expect.objectContaining({ name: "bootstrap", scopes: ["admin"], hash: hashAdminToken(first.token), revokedAt: null })]);
    expect(JSON.stringify(await registry().events(0, 100))).not.toContain(first.token);
    expect((await registry().events(0, 100)).map((e) => e.type)).toEqual(["admin_token.created"]);
  });

  it("is KEYS_ADMIN_TOKEN when set: ensured once by replicas starting together, a changed one added beside", async () => {
    const file = path.join(dir(), "unused");
    const configured = generateAdminToken();
    await Promise.all([1, 2, 3].map(() => ensureBootstrapToken(registry(), { configured, file, clock })));
    expect((await registry().listAdminTokens()).map((t) => t.name)).toEqual(["bootstrap"]);
    const changed = generateAdminToken();
    await ensureBootstrapToken(registry(), { configured: changed, file, clock });
    const tokens = await registry().listAdminTokens();
    expect(tokens.map((t) => t.hash)).toEqual([hashAdminToken(configured), hashAdminToken(changed)]);
    expect(tokens[1]!.name).toMatch(/^bootstrap-[0-9a-f]{8}$/);
  });
});

describe("scopes", () => {
  it("admin implies every scope; others only themselves", () => {
    expect(allowsAny(["admin"], ["keys:write"])).toBe(true);
    expect(allowsAny(["keys:read"], ["keys:read", "gateway"])).toBe(true);
    expect(allowsAny(["keys:read"], ["keys:write"])).toBe(false);
    expect(allowsAny(["gateway"], ["admin"])).toBe(false);
  });
});
