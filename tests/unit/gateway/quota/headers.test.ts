import { describe, expect, it } from "vitest";
import { policyName, rateLimitHeaders } from "../../../../gateway/quota/headers.ts";
import type { BanPolicy, Decision, WindowLimit } from "../../../../gateway/limiter/limiter.ts";
import { createMemoryStore } from "../../../../gateway/limiter/memory-store.ts";
import { windowsFor, windowsForLimits } from "../../../../gateway/quota/plans.ts";

const T0 = Date.UTC(2030, 0, 1);
const T0S = T0 / 1000;
const SEC = 1000;

/** A memory store at a settable instant, for real decisions. */
function limiter(ban: BanPolicy = { after: 1000, seconds: 900 }) {
  let now = T0;
  const store = createMemoryStore({ ban, clock: () => now });
  return async (ms: number, windows: readonly WindowLimit[], subject = "key:h"): Promise<Decision> => {
    now = ms;
    return store.hit(subject, windows);
  };
}

/** RFC 9651 List of Items: a String with Integer parameters, e.g. `"minute";q=60;w=60`. */
const SF_LIST = /^"[\x20-\x21\x23-\x5b\x5d-\x7e]*"(;[a-z][a-z0-9_.*-]*=\d{1,15})+(, "[\x20-\x21\x23-\x5b\x5d-\x7e]*"(;[a-z][a-z0-9_.*-]*=\d{1,15})+)*$/;

describe("rateLimitHeaders", () => {
  it("describes the binding window in X-RateLimit-* and both windows in the IETF fields", async () => {
    const hit = limiter();
    const headers = rateLimitHeaders(await hit(T0 + 250, windowsFor({ plan: "free" })));
    expect(headers).toEqual({
      "X-RateLimit-Limit": "60",
      "X-RateLimit-Remaining": "59",
      "X-RateLimit-Reset": String(T0S + 61),
      "RateLimit-Policy": '"minute";q=60;w=60, "day";q=1000;w=86400',
      // t: seconds during which no more than r can be used (until the oldest bucket leaves).
      RateLimit: '"minute";r=59;t=61, "day";r=999;t=87840',
    });
    expect(headers["RateLimit-Policy"]).toMatch(SF_LIST);
    expect(headers.RateLimit).toMatch(SF_LIST);
  });

  it("binds on the day window when it has less left", async () => {
    const hit = limiter();
    const headers = rateLimitHeaders(await hit(T0, windowsForLimits({ perMinute: 60, perDay: 10 })));
    expect(headers).toMatchObject({ "X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "9", "X-RateLimit-Reset": String(T0S + 1440 + 86_400) });
  });

  it("on 429 gives the exact Retry-After, and the refusing window's r=0 with t = Retry-After", async () => {
    const hit = limiter();
    const w = windowsForLimits({ perMinute: 2, perDay: 1000 });
    await hit(T0 + 100, w);
    await hit(T0 + 20_400, w);
    const limited = await hit(T0 + 30_700, w);
    expect(limited.outcome).toBe("limited");
    const headers = rateLimitHeaders(limited);
    // The first request's bucket leaves the window at T0 + 61 s: 30.3 s later, rounded up.
    expect(headers).toMatchObject({
      "Retry-After": "31",
      "X-RateLimit-Limit": "2",
      "X-RateLimit-Remaining": "0",
      "X-RateLimit-Reset": String(T0S + 81),
      RateLimit: '"minute";r=0;t=31, "day";r=998;t=87810',
    });
    expect((await hit(T0 + 30_700 + 31 * SEC, w)).outcome).toBe("admitted");
  });

  it("while banned reports nothing available until the ban ends", async () => {
    const hit = limiter({ after: 2, seconds: 900 });
    const w = windowsForLimits({ perMinute: 1, perDay: 1000 });
    await hit(T0, w);
    await hit(T0 + SEC, w);
    const banned = await hit(T0 + 2 * SEC, w);
    expect(banned.outcome).toBe("banned");
    const headers = rateLimitHeaders(banned);
    expect(headers).toMatchObject({
      "Retry-After": "900",
      "X-RateLimit-Remaining": "0",
      "X-RateLimit-Reset": String(T0S + 2 + 900),
      RateLimit: '"minute";r=0;t=900, "day";r=0;t=900',
    });
    expect(Number(headers["X-RateLimit-Limit"])).toBeGreaterThan(0);
  });

  it("sends no Retry-After unless refused", async () => {
    const hit = limiter();
    expect(rateLimitHeaders(await hit(T0, windowsFor({ plan: "pro" })))).not.toHaveProperty("Retry-After");
    const revoked: Decision = { ...(await hit(T0, windowsFor({ plan: "pro" }))), outcome: "revoked" };
    expect(rateLimitHeaders(revoked)).not.toHaveProperty("Retry-After");
  });

  it("names policies by window and escapes given names as Structured Field strings", async () => {
    expect([60, 3600, 86_400, 120].map(policyName)).toEqual(["minute", "hour", "day", "120s"]);
    const hit = limiter();
    const d = await hit(T0, windowsFor({ plan: "business" }));
    const headers = rateLimitHeaders(d, ['per "min"', "per\\day"]);
    expect(headers["RateLimit-Policy"]).toBe('"per \\"min\\"";q=1000;w=60, "per\\\\day";q=100000;w=86400');
    expect(() => rateLimitHeaders(d, ["minüte", "day"])).toThrow(RangeError);
  });
});
