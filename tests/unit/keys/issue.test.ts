import { describe, expect, it } from "vitest";
import { KEY_AUDIENCE, KEY_ISSUER } from "../../../lib/api-key-format.ts";
import { UsageError } from "../../../keys/errors.ts";
import { issueKey, validateIssueOptions, type IssueOptions } from "../../../keys/issue.ts";
import { ensureKeyPair } from "../../../keys/key-pairs.ts";
import { readIssued } from "../../../keys/registry.ts";
import { tokenPayload, useTempKeysDir } from "../../../testkit/keys.ts";

const keysDir = useTempKeysDir();
const NOW = Date.UTC(2030, 5, 1, 12);

describe("issueKey", () => {
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

  it("records every key in issued.jsonl without the token", () => {
    const { kid } = ensureKeyPair(keysDir());
    const a = issueKey(keysDir(), { plan: "free", name: "Ada", now: NOW });
    const b = issueKey(keysDir(), { plan: "enterprise", perMinute: 1, perDay: 2, expiresInSeconds: 60, now: NOW });
    expect(readIssued(keysDir())).toEqual([
      { keyId: tokenPayload(a).sub, name: "Ada", plan: "free", kid, createdAt: NOW / 1000, expiresAt: null },
      {
        keyId: tokenPayload(b).sub,
        name: "",
        plan: "enterprise",
        perMinute: 1,
        perDay: 2,
        kid,
        createdAt: NOW / 1000,
        expiresAt: NOW / 1000 + 60,
      },
    ]);
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

describe("validateIssueOptions", () => {
  it.each<[string, IssueOptions, RegExp]>([
    ["enterprise without limits", { plan: "enterprise" }, /need both --per-minute and --per-day/],
    ["enterprise with one limit", { plan: "enterprise", perMinute: 5 }, /need both/],
    ["zero limit", { plan: "enterprise", perMinute: 0, perDay: 5 }, /--per-minute must be a positive integer/],
    ["fractional limit", { plan: "enterprise", perMinute: 5, perDay: 5.5 }, /--per-day must be a positive integer/],
    ["per-day below per-minute", { plan: "enterprise", perMinute: 10, perDay: 5 }, /--per-day \(5\) must be at least --per-minute \(10\)/],
    ["limits on pro", { plan: "pro", perMinute: 10 }, /enterprise keys only/],
    ["limits on free", { plan: "free", perDay: 10 }, /enterprise keys only/],
    ["zero lifetime", { plan: "free", expiresInSeconds: 0 }, /positive number of seconds/],
    ["long name", { plan: "free", name: "x".repeat(201) }, /--name/],
    ["control characters in name", { plan: "free", name: "a\nb" }, /--name/],
  ])("rejects %s", (_, opts, message) => {
    expect(() => validateIssueOptions(opts)).toThrowError(UsageError);
    expect(() => validateIssueOptions(opts)).toThrowError(message);
  });

  it("accepts per-day equal to per-minute", () => {
    expect(() => validateIssueOptions({ plan: "enterprise", perMinute: 7, perDay: 7 })).not.toThrow();
  });
});
