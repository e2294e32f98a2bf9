import { execFile, execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { AuthError, issuedFilePath, loadPublicKeys, revokedFilePath, verifyTokenSignature, type ApiKey } from "../../../lib/api-key-format.ts";
import { keyChangesFilePath } from "../../../lib/key-changes.ts";
import { openRegistry } from "../../../keys/registry/open.ts";
import type { KeyEvent, KeyRecord } from "../../../lib/key-record.ts";
import { createTestDatabase } from "../../../testkit/postgres.ts";
import { freePort } from "../../../testkit/net.ts";
import { runKeysCli, tokenPayload, useRevocationRedis, useTempKeysDir, type CliRun } from "../../../testkit/keys.ts";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const keysDir = useTempKeysDir();

/** `npm run keys -- ...` as a real process against the test's KEYS_DIR only. */
const keys = (args: string[], env: Record<string, string> = {}): Promise<CliRun> => runKeysCli(keysDir(), args, env);

async function ok(args: string[], env?: Record<string, string>): Promise<string> {
  const run = await keys(args, env);
  expect(run, run.stderr).toMatchObject({ code: 0 });
  return run.stdout;
}

const issue = async (...args: string[]) => (await ok(["issue", ...args])).trim();

/** What the CLI left in the test's registry (KEYS_DIR/keys.sqlite, as runKeysCli points KEYS_DB): every key and every event. */
async function registryState(db = path.join(keysDir(), "keys.sqlite")): Promise<{ keys: KeyRecord[]; events: KeyEvent[] }> {
  const registry = await openRegistry(db);
  try {
    return { keys: (await registry.listKeys({ now: Date.now() }, 100)).items, events: await registry.events(0, 1000) };
  } finally {
    await registry.close();
  }
}

/** The key a token carries once its signature verifies against KEYS_DIR's public keys (throws AuthError). */
const verified = (token: string): ApiKey => verifyTokenSignature(token, loadPublicKeys(keysDir()), Math.floor(Date.now() / 1000)).apiKey;

/** Verifies against KEYS_DIR's public keys; returns the AuthError reason or the plan. */
function check(token: string): string {
  try {
    return verified(token).plan;
  } catch (err) {
    if (err instanceof AuthError) return err.reason;
    throw err;
  }
}

const TOKEN_LINE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\n$/;

// Each test runs the CLI as a process several times (node start-up, about 1 s each when idle,
// many seconds on a loaded machine): the timeout is a hang guard, not a speed bound.
const CLI_TEST_TIMEOUT_MS = 90_000;

describe("keys CLI", { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it("init creates the pair once (private key 0600) and is idempotent", async () => {
    const first = await ok(["init"]);
    expect(first).toMatch(/^created signing key pair \S+ in /);
    const kid = readFileSync(path.join(keysDir(), "private", "active"), "utf8").trim();
    expect(statSync(path.join(keysDir(), "private", `${kid}.pem`)).mode & 0o777).toBe(0o600);
    expect(statSync(path.join(keysDir(), "private")).mode & 0o777).toBe(0o700);
    expect(await ok(["init"])).toBe(`signing key pair ${kid} already present in ${keysDir()}\n`);
  });

  it("issue prints only a token that verifies; the enterprise limits are in it", async () => {
    await ok(["init"]);
    const run = await keys(["issue", "--plan", "enterprise", "--per-minute", "100", "--per-day", "5000", "--expires-in", "30d", "--name", "Acme"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(TOKEN_LINE);
    const token = run.stdout.trim();
    expect(verified(token)).toMatchObject({ plan: "enterprise", perMinute: 100, perDay: 5000 });
    for (const plan of ["free", "pro", "business"]) expect(check(await issue("--plan", plan))).toBe(plan);
  });

  it("list shows the keys and never the tokens", async () => {
    await ok(["init"]);
    const a = await issue("--plan", "pro", "--name", "Ada Lovelace", "--expires-in", "12h");
    const b = await issue("--plan", "enterprise", "--per-minute", "7", "--per-day", "70");
    const table = await ok(["list"]);
    const json = await ok(["list", "--json"]);
    for (const token of [a, b]) {
      for (const part of [token, token.split(".")[1]!, token.split(".")[2]!]) {
        expect(table).not.toContain(part);
        expect(json).not.toContain(part);
      }
    }
    expect(table).toMatch(/^ID +NAME +PLAN +LIMITS +SIGNED BY +CREATED +EXPIRES +REVOKED +ROLLED +LAST USED\n/);
    expect(table).toContain("Ada Lovelace");
    expect(table).toContain("7/min 70/day");
    expect(JSON.parse(json).map((k: { keyId: string }) => k.keyId)).toEqual([tokenPayload(a).sub, tokenPayload(b).sub]);
  });

  it("revoke by id and by token records it in the registry with actor cli; again: already revoked; unknown ids fail with exit 1", async () => {
    await ok(["init"]);
    const a = await issue("--plan", "pro");
    const b = await issue("--plan", "free", "--expires-in", "2s");
    expect(await ok(["revoke", String(tokenPayload(a).sub)])).toBe(`revoked ${tokenPayload(a).sub} (registry; REDIS_URL not set)\n`);
    expect(await ok(["revoke", b])).toMatch(/^revoked key_/);
    expect(await ok(["revoke", b])).toMatch(/^already revoked key_/);
    const { keys: records, events } = await registryState();
    expect(records.filter((k) => k.revokedAt !== null).map((k) => k.id).sort()).toEqual([tokenPayload(a).sub, tokenPayload(b).sub].sort());
    expect(events.map((e) => [e.type, e.actor])).toEqual([
      ["key.created", "cli"],
      ["key.created", "cli"],
      ["key.revoked", "cli"],
      ["key.revoked", "cli"],
    ]);
    expect(await ok(["list"])).not.toMatch(/ no\n/);

    const unknown = await keys(["revoke", "key_ffffffffffffffff"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^keys: unknown key id "key_ffffffffffffffff"[^\n]*\n$/);
  });

  it("concurrent commands all land in the registry (one writer at a time, gap-free events)", async () => {
    await ok(["init"]);
    const ids = await Promise.all(Array.from({ length: 4 }, async () => String(tokenPayload(await issue("--plan", "free")).sub)));
    await Promise.all(ids.map((id) => ok(["revoke", id])));
    const { keys: records, events } = await registryState();
    expect(records.filter((k) => k.revokedAt !== null).map((k) => k.id).sort()).toEqual([...ids].sort());
    expect(events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it("usage --history shows the reported requests by hour or day, as a table or JSON; --granularity needs --history", async () => {
    await ok(["init"]);
    const id = String(tokenPayload(await issue("--plan", "pro")).sub);
    expect(await ok(["usage", id, "--history"])).toBe("no requests reported in this range (by hour)\n");
    const hour = Math.floor(Date.now() / 3_600_000) * 3_600_000;
    const registry = await openRegistry(path.join(keysDir(), "keys.sqlite"));
    try {
      const bucket = { keyId: id, "2xx": 5, "4xx": 1, "5xx": 0, limited: 2, banned: 0, forbidden: 1 };
      const report = { at: Date.now(), actor: "gw", bans: [], lastUsed: [], dailyLimits: {}, thresholdPercents: [80, 100] };
      await registry.applyUsageReport({ ...report, reportId: "r1", buckets: [{ ...bucket, hour: hour - 3_600_000 }, { ...bucket, hour }] });
    } finally {
      await registry.close();
    }
    const iso = (ms: number) => new Date(ms).toISOString();
    expect(JSON.parse(await ok(["usage", id, "--history", "--json"]))).toEqual({
      granularity: "hour",
      buckets: [hour - 3_600_000, hour].map((h) => ({ start: iso(h), total: 9, "2xx": 5, "4xx": 1, "5xx": 0, limited: 2, banned: 0, forbidden: 1 })),
    });
    const table = await ok(["usage", id, "--history"]);
    expect(table.split("\n")[0]).toMatch(/^HOUR \(UTC\)\s+TOTAL\s+2XX\s+4XX\s+5XX\s+LIMITED\s+BANNED\s+FORBIDDEN$/);
    expect(table).toContain(`${iso(hour).slice(0, 16).replace("T", " ")}  9      5    1    0    2        0       1`);
    const days = JSON.parse(await ok(["usage", id, "--history", "--granularity", "day", "--json"]));
    expect(days.granularity).toBe("day");
    expect(days.buckets.reduce((sum: number, b: { total: number }) => sum + b.total, 0)).toBe(18);
    expect(await keys(["usage", id, "--granularity", "day"])).toMatchObject({ code: 2, stderr: expect.stringContaining("--granularity goes with --history") });
    expect(await keys(["usage", id, "--history", "--granularity", "week"])).toMatchObject({ code: 2, stderr: expect.stringContaining("hour or day") });
  });

  it("set-plan and roll change the key in the registry; the rolled key verifies with gen; usage shows the plan in force", async () => {
    await ok(["init"]);
    const token = await issue("--plan", "free", "--name", "Ada");
    const id = String(tokenPayload(token).sub);
    expect(await ok(["set-plan", token, "--plan", "enterprise", "--per-minute", "7", "--per-day", "70"])).toBe(
      `${id} now on plan enterprise (7/minute, 70/day) (registry; REDIS_URL not set: gateways following the key service apply it within about a second)\n`,
    );
    const rolled = await keys(["roll", id, "--grace", "1h"]);
    expect(rolled).toMatchObject({ code: 0, stdout: expect.stringMatching(TOKEN_LINE) });
    expect(rolled.stderr).toMatch(new RegExp(`^rolled ${id} \\(generation 1\\); the keys it replaces work until \\S+Z\\n$`));
    expect(tokenPayload(rolled.stdout.trim())).toMatchObject({ sub: id, plan: "enterprise", lim: { m: 7, d: 70 }, gen: 1 });
    expect(check(rolled.stdout.trim())).toBe("enterprise");
    expect(JSON.parse(await ok(["usage", id, "--json"]))).toMatchObject({ keyId: id, plan: "enterprise", limits: { perMinute: 7, perDay: 70 }, used: { minute: 0, day: 0 } });
    const [listed] = JSON.parse(await ok(["list", "--json"]));
    expect(listed).toMatchObject({ keyId: id, name: "Ada", plan: "enterprise", rolls: 1 });
    const { events } = await registryState();
    expect(events.map((e) => [e.type, e.actor])).toEqual([
      ["key.created", "cli"],
      ["key.updated", "cli"],
      ["key.rolled", "cli"],
    ]);
    const bad = await keys(["set-plan", id, "--plan", "pro", "--per-minute", "5"]);
    expect(bad).toMatchObject({ code: 2, stdout: "" });
    expect(bad.stderr).toMatch(/^keys: --per-minute is for enterprise keys only/);
    await ok(["revoke", id]);
    const revoked = await keys(["roll", id]);
    expect(revoked).toMatchObject({ code: 1, stdout: "" });
    expect(revoked.stderr).toMatch(/is revoked/);
  });

  it("import brings a file-era KEYS_DIR into the registry: its tokens keep their id, plan and generation, revoked stay revoked; twice changes nothing", async () => {
    await ok(["init"]);
    const from = path.join(keysDir(), "old");
    mkdirSync(from);
    const kid = readFileSync(path.join(keysDir(), "private", "active"), "utf8").trim();
    const id = (n: number) => `key_000000000000000${n}`;
    const created = Math.floor(Date.now() / 1000) - 3600;
    writeFileSync(
      issuedFilePath(from),
      [1, 2, 3].map((n) => JSON.stringify({ keyId: id(n), name: `k${n}`, plan: "pro", kid, createdAt: created + n, expiresAt: null })).join("\n") + "\n",
    );
    writeFileSync(revokedFilePath(from), JSON.stringify({ revoked: { [id(2)]: { revokedAt: created + 10, expiresAt: null } } }));
    writeFileSync(keyChangesFilePath(from), JSON.stringify({ keys: { [id(3)]: { plan: "business", perMinute: 1000, perDay: 100000, planChangedAt: created + 20, generation: 1, graceUntil: { "0": created + 30 } } } }));
    expect(await ok(["import", "--from", from])).toBe(`imported ${from} into the key registry: 3 new key(s), 0 updated, 0 already there\n`);
    const first = await registryState();
    expect(await ok(["import", "--from", from])).toBe(`imported ${from} into the key registry: 0 new key(s), 0 updated, 3 already there\n`);
    expect(await registryState()).toEqual(first);
    expect(first.events.map((e) => [e.type, e.actor, e.keyId])).toEqual([1, 2, 3].map((n) => ["key.created", "cli", id(n)]));
    expect(first.keys.map((k) => [k.id, k.plan, k.generation, k.kid, k.revokedAt !== null])).toEqual([
      [id(1), "pro", 0, kid, false],
      [id(2), "pro", 0, kid, true],
      [id(3), "business", 1, kid, false],
    ]);
    // Without --from: KEYS_DIR itself (no issued.jsonl there).
    expect(await ok(["import"])).toBe(`imported ${keysDir()} into the key registry: 0 new key(s), 0 updated, 0 already there\n`);
  });

  it("rotate: keys of both pairs verify; retire the old pair: its keys are refused; the signer cannot be retired", async () => {
    await ok(["init"]);
    const oldKid = readFileSync(path.join(keysDir(), "private", "active"), "utf8").trim();
    const oldKey = await issue("--plan", "pro");
    expect(await ok(["rotate"])).toMatch(/^signing key pair \S+ now signs new keys\n$/);
    const newKid = readFileSync(path.join(keysDir(), "private", "active"), "utf8").trim();
    const newKey = await issue("--plan", "business");
    expect([check(oldKey), check(newKey)]).toEqual(["pro", "business"]);

    const refused = await keys(["retire", newKid]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/active signing key/);

    expect(await ok(["retire", oldKid])).toMatch(new RegExp(`^retired ${oldKid}: 1 unexpired key\\(s\\) it signed no longer verify\\n$`));
    expect([check(oldKey), check(newKey)]).toEqual(["invalid", "business"]);
    expect(await ok(["pairs"])).not.toContain(oldKid);
  });

  // A sample through the real process; tests/unit/keys cover every validation rule.
  it.each([
    [[], /missing command/],
    [["frobnicate"], /unknown command "frobnicate"/],
    [["issue"], /--plan must be one of free, pro, business, enterprise/],
    [["issue", "--plan", "pro", "--per-minute", "5"], /--per-minute is for enterprise keys only/],
    [["issue", "--plan", "enterprise"], /--per-minute is required for the enterprise plan; --per-day is required/],
    [["issue", "--plan", "enterprise", "--per-minute", "10", "--per-day", "abc"], /--per-day must be a positive integer/],
    [["issue", "--plan", "pro", "--expires-in", "1w"], /--expires-in must be/],
    [["issue", "--plan", "pro", "--bogus"], /Unknown option '--bogus'/],
    [["issue", "--plan", "pro", "extra"], /expected no arguments/],
    [["revoke"], /expected KEY_OR_KEY_ID/],
    [["retire"], /expected KID/],
    [["import", "extra"], /expected no arguments/],
    [["sync"], /set REDIS_URL/],
  ] as const)("usage error %j → exit 2 and one clear line", async (args, message) => {
    const run = await keys([...args]);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(message);
    expect(run.stderr).toMatch(/^keys: [^\n]+\n$/);
  });

  it("an argument starting with a dash is an argument, not an option (a kid may start with '-')", async () => {
    await ok(["init"]);
    const run = await keys(["retire", "-W3x9Q"]);
    expect(run).toMatchObject({ code: 1, stdout: "" });
    expect(run.stderr).not.toMatch(/Unknown option/);
    expect(run.stderr).toMatch(/-W3x9Q/);
  });

  it("issue before init fails with exit 1 and says what to do", async () => {
    const run = await keys(["issue", "--plan", "free"]);
    expect(run).toMatchObject({ code: 1, stdout: "" });
    expect(run.stderr).toMatch(/^keys: no signing key in .*: run `npm run keys -- init` first\n$/);
  });

  it("a bad REDIS_URL or KEYS_DB names the variable", async () => {
    const run = await keys(["list"], { REDIS_URL: "http://nope" });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^keys: invalid configuration: REDIS_URL /);
    const db = await keys(["list"], { KEYS_DB: "mysql://db/keys" });
    expect(db.code).toBe(1);
    expect(db.stderr).toMatch(/^keys: invalid configuration: KEYS_DB /);
  });

  it("without KEYS_DIR, keeps keys in data/keys (never in the source tree); an older checkout's keys/ is still used, with one line saying how to move it", async () => {
    const { KEYS_DIR: _unset, REDIS_URL: _never, ...inherited } = process.env;
    const run = (cwd: string, ...args: string[]) =>
      new Promise<CliRun>((resolve) =>
        execFile(process.execPath, [path.join(ROOT, "tools/keys.ts"), ...args], { cwd, env: inherited }, (err, stdout, stderr) =>
          resolve({ code: err ? Number(err.code) : 0, stdout, stderr }),
        ),
      );
    const fresh = await mkdtemp(path.join(os.tmpdir(), "petstore-keys-cwd-"));
    const older = await mkdtemp(path.join(os.tmpdir(), "petstore-keys-cwd-"));
    try {
      expect(await run(fresh, "init")).toMatchObject({ code: 0, stdout: expect.stringMatching(/ in data\/keys\n$/), stderr: "" });
      expect(existsSync(path.join(fresh, "data/keys/private/active"))).toBe(true);

      mkdirSync(path.join(older, "keys/private"), { recursive: true });
      const legacy = await run(older, "init");
      expect(legacy).toMatchObject({ code: 0, stdout: expect.stringMatching(/ in keys\n$/) });
      expect(legacy.stderr).toMatch(/^KEYS_DIR: using keys\/ of an older checkout; .*mv keys\/private .* data\/keys\/ .*\n$/);
      expect(existsSync(path.join(older, "data"))).toBe(false);
    } finally {
      await rm(fresh, { recursive: true, force: true });
      await rm(older, { recursive: true, force: true });
    }
  });

  it("the default KEYS_DIR layout is git-ignored, and so is an older checkout's keys/", () => {
    const files = ["data/keys.sqlite", "data/keys/private/k.pem", "data/keys/private/active", "data/keys/public/k.pem", "data/keys/issued.jsonl", "data/keys/revoked.json", "keys/private/k.pem", "keys/revoked.json"];
    const ignored = execFileSync("git", ["check-ignore", "--no-index", ...files], { cwd: ROOT, encoding: "utf8" });
    expect(ignored.trim().split("\n")).toEqual(files);
  });

  it("help prints the commands", async () => {
    const run = await keys(["help"]);
    expect(run.code).toBe(0);
    for (const cmd of ["init", "issue", "revoke", "set-plan", "roll", "usage", "sync", "list", "import", "rotate", "retire", "pairs"]) expect(run.stdout).toContain(`  ${cmd}`);
  });
});

describe("keys CLI with REDIS_URL (a private redis-server)", { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  const redis = useRevocationRedis();

  it("revoke publishes the record and the revocation entry every gateway's limiter checks, until a day after expiry", async () => {
    await ok(["init"]);
    const token = await issue("--plan", "pro", "--expires-in", "1h");
    const id = String(tokenPayload(token).sub);
    expect(await ok(["revoke", token], { REDIS_URL: redis.url() })).toBe(`revoked ${id} (registry and Redis)\n`);
    const { value, ttl } = await redis.revocation(id);
    expect(value).toBe("1");
    expect(ttl).toBeGreaterThan(3600 + 86_400 - 120);
    expect(ttl).toBeLessThanOrEqual(3600 + 86_400);
    expect(await ok(["sync"], { REDIS_URL: redis.url() })).toBe("published 1 key record(s) (1 revoked) to Redis\n");
  });

  it("unreachable Redis: exit 1 with a clear line; the revocation stands in the registry", async () => {
    await ok(["init"]);
    const id = String(tokenPayload(await issue("--plan", "pro")).sub);
    const run = await keys(["revoke", id], { REDIS_URL: `redis://127.0.0.1:${await freePort()}` });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^keys: key_\S+ is revoked in the key registry .*but Redis at redis:\/\/127\.0\.0\.1:\d+ could not be updated .*sync.*\n$/);
    expect((await registryState()).keys[0]!.revokedAt).not.toBeNull();
  });
});

describe("keys CLI on PostgreSQL (a private database)", { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  it("issue, revoke, list and import work the same on KEYS_DB=postgres://…", async () => {
    const db = await createTestDatabase();
    try {
      const env = { KEYS_DB: db.url };
      await ok(["init"], env);
      const token = (await ok(["issue", "--plan", "business", "--name", "pg"], env)).trim();
      const id = String(tokenPayload(token).sub);
      expect(await ok(["revoke", id], env)).toMatch(/^revoked key_/);
      expect(JSON.parse(await ok(["list", "--json"], env))).toMatchObject([{ keyId: id, name: "pg", plan: "business", revokedAt: expect.any(String) }]);
      expect(await ok(["import"], env)).toMatch(/: 0 new key\(s\)/);
      const { events } = await registryState(db.url);
      expect(events.map((e) => [e.seq, e.type, e.actor])).toEqual([
        [1, "key.created", "cli"],
        [2, "key.revoked", "cli"],
      ]);
      expect(existsSync(path.join(keysDir(), "keys.sqlite"))).toBe(false);
    } finally {
      await db.drop();
    }
  });
});
