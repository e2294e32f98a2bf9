import { execFile } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { tokenPayload, useTempKeysDir } from "../../testkit/keys.ts";

// npm as a user runs it from the repository: it reports its own errors, and `-s` leaves a
// command's output alone on stdout (the project sets no loglevel of its own).
const ROOT = path.resolve(import.meta.dirname, "../..");
const keysDir = useTempKeysDir();

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * `npm <args>` from the repository root. npm hands its settings to the scripts it runs as
 * npm_config_* variables (`npm test -s` would pass loglevel=silent on): none reach this npm, so it
 * behaves as in a user's shell. Never the developer's or CI's Redis either.
 */
function npm(args: string[]): Promise<Run> {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name) && name !== "REDIS_URL"),
  );
  return new Promise((resolve) => {
    execFile("npm", args, { cwd: ROOT, env: { ...env, KEYS_DIR: keysDir() } }, (err, stdout, stderr) =>
      resolve({ code: err ? Number(err.code) : 0, stdout, stderr }),
    );
  });
}

describe("npm", { timeout: 60_000 }, () => {
  it("says what went wrong: `npm run no-such-script` prints the error and exits non-zero", async () => {
    const run = await npm(["run", "no-such-script"]);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('Missing script: "no-such-script"');
  });

  it("`npm run -s keys -- issue` prints the key alone on stdout, as `KEY=$(...)` needs", async () => {
    expect((await npm(["run", "-s", "keys", "--", "init"])).code).toBe(0);
    const run = await npm(["run", "-s", "keys", "--", "issue", "--plan", "free", "--name", "npm-test"]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/^issued key_[0-9a-f]+\n$/); // the CLI's own note; nothing from npm
    expect(run.stdout).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\n$/);
    expect(tokenPayload(run.stdout.trim())).toMatchObject({ plan: "free", aud: "pet-store-api" });
  });

  it("without -s, npm's own banner comes first on stdout (why the README says -s)", async () => {
    expect((await npm(["run", "-s", "keys", "--", "init"])).code).toBe(0);
    const run = await npm(["run", "keys", "--", "issue", "--plan", "free"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^\n?> pet-store-api@[^\n]* keys\n/);
    expect(run.stdout.trim().split("\n").at(-1)).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
  });
});
