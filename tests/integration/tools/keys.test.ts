import { execFile, execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, statSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { AuthError, loadPublicKeys, readRevokedFile, verifyTokenSignature, type ApiKey } from "../../../lib/api-key-format.ts";
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

  it("revoke by id and by token writes revoked.json; unknown ids fail with exit 1", async () => {
    await ok(["init"]);
    const a = await issue("--plan", "pro");
    const b = await issue("--plan", "free", "--expires-in", "2s");
    expect(await ok(["revoke", String(tokenPayload(a).sub)])).toMatch(/^revoked key_/);
    expect(await ok(["revoke", b])).toMatch(/^revoked key_/);
    expect(Object.keys(readRevokedFile(keysDir()).revoked).sort()).toEqual([tokenPayload(a).sub, tokenPayload(b).sub].sort());
    expect(await ok(["list"])).not.toMatch(/ no\n/);

    const unknown = await keys(["revoke", "key_ffffffffffffffff"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^keys: unknown key id "key_ffffffffffffffff"[^\n]*\n$/);
  });

  it("concurrent revokes all land (the revocation list is locked)", async () => {
    await ok(["init"]);
    const ids = await Promise.all(Array.from({ length: 4 }, async () => String(tokenPayload(await issue("--plan", "free")).sub)));
    await Promise.all(ids.map((id) => ok(["revoke", id])));
    expect(Object.keys(readRevokedFile(keysDir()).revoked).sort()).toEqual([...ids].sort());
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
    [["issue", "--plan", "pro", "--per-minute", "5"], /enterprise keys only/],
    [["issue", "--plan", "enterprise"], /need both --per-minute and --per-day/],
    [["issue", "--plan", "enterprise", "--per-minute", "10", "--per-day", "abc"], /--per-day must be a positive integer/],
    [["issue", "--plan", "pro", "--expires-in", "1w"], /--expires-in must be/],
    [["issue", "--plan", "pro", "--bogus"], /Unknown option '--bogus'/],
    [["issue", "--plan", "pro", "extra"], /expected no arguments/],
    [["revoke"], /expected KEY_OR_KEY_ID/],
    [["retire"], /expected KID/],
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

  it("a bad REDIS_URL names the variable", async () => {
    const run = await keys(["list"], { REDIS_URL: "http://nope" });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^keys: invalid configuration: REDIS_URL /);
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
    const files = ["data/keys/private/k.pem", "data/keys/private/active", "data/keys/public/k.pem", "data/keys/issued.jsonl", "data/keys/revoked.json", "keys/private/k.pem", "keys/revoked.json"];
    const ignored = execFileSync("git", ["check-ignore", "--no-index", ...files], { cwd: ROOT, encoding: "utf8" });
    expect(ignored.trim().split("\n")).toEqual(files);
  });

  it("help prints the commands", async () => {
    const run = await keys(["help"]);
    expect(run.code).toBe(0);
    for (const cmd of ["init", "issue", "revoke", "list", "rotate", "retire"]) expect(run.stdout).toContain(`  ${cmd}`);
  });
});

describe("keys CLI revoke with REDIS_URL (a private redis-server)", { timeout: CLI_TEST_TIMEOUT_MS }, () => {
  const redis = useRevocationRedis();

  it("sets the revocation key every gateway's limiter checks, with TTL = expiry + 60 s", async () => {
    await ok(["init"]);
    const token = await issue("--plan", "pro", "--expires-in", "1h");
    const id = String(tokenPayload(token).sub);
    expect(await ok(["revoke", token], { REDIS_URL: redis.url() })).toBe(`revoked ${id} (revoked.json and Redis)\n`);
    const { value, ttl } = await redis.revocation(id);
    expect(value).toBe("1");
    expect(ttl).toBeGreaterThan(3600);
    expect(ttl).toBeLessThanOrEqual(3660);
    expect(readRevokedFile(keysDir()).revoked).toHaveProperty(id);
  });

  it("unreachable Redis: exit 1 with a clear line; the file revocation stands", async () => {
    await ok(["init"]);
    const id = String(tokenPayload(await issue("--plan", "pro")).sub);
    const run = await keys(["revoke", id], { REDIS_URL: `redis://127.0.0.1:${await freePort()}` });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^keys: key_\S+ is revoked in .*revoked\.json, but Redis at redis:\/\/127\.0\.0\.1:\d+ could not be updated .*\n$/);
    expect(readRevokedFile(keysDir()).revoked).toHaveProperty(id);
  });
});
