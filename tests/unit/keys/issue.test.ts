import { describe, expect, it } from "vitest";
import { KEY_AUDIENCE, KEY_ISSUER } from "../../../lib/api-key-format.ts";
import { UsageError } from "../../../keys/errors.ts";
import { issueKey, planLimitProblems } from "../../../keys/issue.ts";
import { ensureKeyPair } from "../../../keys/key-pairs.ts";
import { tokenPayload, useTempKeysDir } from "../../../testkit/keys.ts";

const keysDir = useTempKeysDir();
const NOW = Date.UTC(2030, 5, 1, 12);

describe("issueKey (a signed token no registry records)", () => {
  it("signs ES256 with the active kid and the documented claims", () => {
    const { kid } = ensureKeyPair(keysDir());
    const token = issueKey(keysDir(), { plan: "pro", expiresInSeconds: 3600, now: NOW });
    const header = JSON.parse(Buffer.from(token.split(".")[0]!, "base64url").toString());
    expect(header).toEqual({ alg: "ES256", typ: "JWT", kid });
    const payload = tokenPayload(token);
    expect(payload).toEqual({
      sub: expect.stringMatching(/^key_[0-9a-f]{16}$/),
      plan: "pro",
      iss: KEY_ISSUER,
      aud: KEY_AUDIENCE,
      iat: NOW / 1000,
      exp: NOW / 1000 + 3600,
    });
  });

  it("puts enterprise limits in lim and omits exp without a lifetime", () => {
    ensureKeyPair(keysDir());
    const payload = tokenPayload(issueKey(keysDir(), { plan: "enterprise", perMinute: 50, perDay: 5000 }));
    expect(payload.lim).toEqual({ m: 50, d: 5000 });
    expect(payload).not.toHaveProperty("exp");
  });

  it("gives every key a different id", () => {
    ensureKeyPair(keysDir());
    const ids = new Set(Array.from({ length: 50 }, () => tokenPayload(issueKey(keysDir(), { plan: "free" })).sub));
    expect(ids.size).toBe(50);
  });

  it("needs init first", () => {
    expect(() => issueKey(keysDir(), { plan: "free" })).toThrowError(/run `npm run keys -- init`/);
  });
});

describe("planLimitProblems", () => {
  it.each<[string, Parameters<typeof planLimitProblems>[0], { field: string; message: RegExp }[]]>([
    ["enterprise without limits", { plan: "enterprise" }, [{ field: "perMinute", message: /required/ }, { field: "perDay", message: /required/ }]],
    ["enterprise with one limit", { plan: "enterprise", perMinute: 5 }, [{ field: "perDay", message: /required/ }]],
    ["zero limit", { plan: "enterprise", perMinute: 0, perDay: 5 }, [{ field: "perMinute", message: /positive integer/ }]],
    ["fractional limit", { plan: "enterprise", perMinute: 5, perDay: 5.5 }, [{ field: "perDay", message: /positive integer/ }]],
    ["per-day below per-minute", { plan: "enterprise", perMinute: 10, perDay: 5 }, [{ field: "perDay", message: /at least perMinute \(10\)/ }]],
    ["limits on pro", { plan: "pro", perMinute: 10 }, [{ field: "perMinute", message: /enterprise keys only/ }]],
    ["limits on free", { plan: "free", perDay: 10 }, [{ field: "perDay", message: /enterprise keys only/ }]],
  ])("refuses %s, naming the field", (_, limits, expected) => {
    expect(planLimitProblems(limits)).toEqual(expected.map((e) => ({ field: e.field, message: expect.stringMatching(e.message) })));
  });

  it("accepts per-day equal to per-minute, and a plan without limits", () => {
    expect(planLimitProblems({ plan: "enterprise", perMinute: 7, perDay: 7 })).toEqual([]);
    expect(planLimitProblems({ plan: "business" })).toEqual([]);
  });

  it("issueKey refuses what it names", () => {
    ensureKeyPair(keysDir());
    expect(() => issueKey(keysDir(), { plan: "enterprise", perMinute: 5 })).toThrowError(UsageError);
  });
});
