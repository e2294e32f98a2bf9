/**
 * keys/index.ts as a sign-up backend uses it: typed functions, no process, no Redis. What they
 * record is what a gateway reads (its verifier and limiter on the same KEYS_DIR).
 */
import { describe, expect, it } from "vitest";
import { createMemoryStore } from "../../../gateway/limiter/memory-store.ts";
import { publishUsage } from "../../../gateway/limiter/usage-file.ts";
import { windowsForLimits } from "../../../gateway/quota/plans.ts";
import { ensureKeyPair, issueKey, keyUsage, KeysError, listKeys, rollKey, setPlan, UsageError, type KeyUsage } from "../../../keys/index.ts";
import { loadPublicKeys, verifyTokenSignature } from "../../../lib/api-key-format.ts";
import { isRolledAway, readKeyChanges } from "../../../lib/key-changes.ts";
import { createLogger } from "../../../lib/logger.ts";
import { subjectForKey } from "../../../lib/redis-keys.ts";
import { tokenPayload, useTempKeysDir } from "../../../testkit/keys.ts";

const keysDir = useTempKeysDir();
const T0 = Date.UTC(2030, 0, 1);

describe("keys/index.ts", () => {
  it("setPlan records the plan in force; listKeys shows it; bad input throws and records nothing", async () => {
    ensureKeyPair(keysDir());
    const token = issueKey(keysDir(), { plan: "free", now: T0 });
    const id = String(tokenPayload(token).sub);
    const result = await setPlan(keysDir(), token, { plan: "enterprise", perMinute: 7, perDay: 70, now: T0 + 1000 });
    expect(result).toEqual({ keyId: id, plan: "enterprise", perMinute: 7, perDay: 70, redis: false });
    expect(listKeys(keysDir(), { nowMs: T0 + 2000 })[0]).toMatchObject({ plan: "enterprise", perMinute: 7, perDay: 70, planChangedAt: "2030-01-01T00:00:01Z" });
    await expect(setPlan(keysDir(), id, { plan: "enterprise", perMinute: 7 })).rejects.toBeInstanceOf(UsageError);
    await expect(setPlan(keysDir(), "key_0000000000000000", { plan: "pro" })).rejects.toBeInstanceOf(KeysError);
    expect(listKeys(keysDir(), { nowMs: T0 + 2000 })[0]).toMatchObject({ plan: "enterprise", perMinute: 7 });
  });

  it("rollKey: both keys verify; the old one is rolled away once the grace ends, the new one never", async () => {
    ensureKeyPair(keysDir());
    const old = issueKey(keysDir(), { plan: "pro", now: T0 });
    const { key, generation, graceUntil } = await rollKey(keysDir(), old, { graceSeconds: 60, now: T0 });
    expect([generation, graceUntil]).toEqual([1, T0 / 1000 + 60]);
    const verify = (token: string) => verifyTokenSignature(token, loadPublicKeys(keysDir()), T0 / 1000).apiKey;
    expect([verify(old).generation, verify(key).generation]).toEqual([0, 1]);
    expect(verify(key)).toMatchObject({ keyId: tokenPayload(old).sub, plan: "pro" });
    const change = readKeyChanges(keysDir()).keys[String(tokenPayload(old).sub)];
    expect([isRolledAway(change, 0, T0 / 1000 + 59), isRolledAway(change, 0, T0 / 1000 + 60), isRolledAway(change, 1, T0 / 1000 + 60)]).toEqual([false, true, false]);
    const { key: third } = await rollKey(keysDir(), key, { graceSeconds: 0, now: T0 + 61_000 });
    expect(tokenPayload(third)).toMatchObject({ sub: tokenPayload(old).sub, gen: 2 });
    expect(listKeys(keysDir())[0]).toMatchObject({ rolls: 2 });
  });

  it("keyUsage without Redis reads what a memory-limited gateway published", async () => {
    ensureKeyPair(keysDir());
    const token = issueKey(keysDir(), { plan: "enterprise", perMinute: 3, perDay: 30, now: T0 });
    const id = String(tokenPayload(token).sub);
    const now = T0 + 5_000;
    const store = createMemoryStore({ ban: { after: 1, seconds: 60 }, clock: () => now });
    const w = windowsForLimits({ perMinute: 3, perDay: 30 });
    for (let i = 0; i < 4; i++) await store.hit(subjectForKey(id), w); // 3 admitted, then a ban
    await store.hit("ip:127.0.0.1", w); // not a key: not published
    const stop = publishUsage({ store, keysDir: keysDir(), clock: () => now, logger: createLogger("test", "silent"), intervalMs: 60_000 });
    stop(); // writes once
    const usage: KeyUsage = await keyUsage(keysDir(), id, { now: now + 1000 });
    expect(usage).toEqual({
      keyId: id,
      plan: "enterprise",
      limits: { perMinute: 3, perDay: 30 },
      used: { minute: 3, day: 3 },
      remaining: { minute: 0, day: 27 },
      banned: true,
      bannedUntil: new Date(now + 60_000).toISOString(),
      lastUsedAt: new Date(now).toISOString(),
    });
    // A minute later the minute window has slid; the day has not.
    expect((await keyUsage(keysDir(), id, { now: now + 61_000 })).used).toEqual({ minute: 0, day: 3 });
  });
});
