/**
 * What the deploy tests share: podman (configured by deploy/podman/env.sh, handed over by the
 * global setup), commands with their output, a signing pair in a temporary KEYS_DIR, admin tokens
 * and the admin API, HTTP to published loopback ports, and a record of every container, pod, network, volume and secret a test made,
 * so that it is removed even when the test fails.
 */
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { inject } from "vitest";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));

export interface DeploySetup {
  /** Why nothing can run (one line), or null. */
  skip: string | null;
  /** CONTAINERS_CONF and CONTAINERS_STORAGE_CONF (deploy/podman/env.sh). */
  env: Record<string, string>;
}

declare module "vitest" {
  export interface ProvidedContext {
    deploy: DeploySetup;
  }
}

export const setup = (): DeploySetup => inject("deploy");

export interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end; rejects on a non-zero exit unless `allowFail`. */
export function sh(
  cmd: string,
  args: string[],
  opts: { env?: Record<string, string>; input?: string; allowFail?: boolean; timeoutMs?: number; cwd?: string } = {},
): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      cwd: opts.cwd ?? ROOT,
      env: { ...process.env, ...opts.env },
      stdio: ["pipe", "pipe", "pipe"],
      timeout: opts.timeoutMs ?? 120_000,
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code, signal) => {
      const r = { code: code ?? (signal ? 128 : 1), stdout, stderr };
      if (r.code !== 0 && !opts.allowFail) {
        reject(new Error(`${cmd} ${args.join(" ")} exited ${code ?? signal}:\n${stderr.trim().split("\n").slice(-15).join("\n")}`));
      } else resolve(r);
    });
    child.stdin.end(opts.input ?? "");
  });
}

/** podman with the test's configuration. */
export const podman = (args: string[], opts: Parameters<typeof sh>[2] = {}) =>
  sh("podman", args, { ...opts, env: { ...setup().env, ...opts.env } });

/** `podman exec CONTAINER ARGS…`: exit code and output. */
export const exec = (container: string, args: string[]) => podman(["exec", container, ...args], { allowFail: true });

/** Polls `probe` until it gives a value, taking its failures for "not yet"; fails naming `what` and the last failure. */
export async function until<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs: number, everyMs = 500): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ""}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** A KEYS_DIR of the test's own with a signing pair (npm run keys -- init), as an operator makes one for the cluster's Secrets. */
export async function makeKeyPair(): Promise<{ dir: string; kid: string; cleanup: () => void }> {
  const dir = mkdtempSync(path.join(tmpdir(), "pet-store-deploy-keys-"));
  // The containers run as uid 1000: the public half must be readable by others, as in a checkout.
  chmodSync(dir, 0o755);
  // The registry the command line may open stays in the temporary directory too, never the checkout's data/.
  await sh("npm", ["run", "-s", "keys", "--", "init"], { env: { KEYS_DIR: path.join(dir), KEYS_DB: path.join(dir, "keys.sqlite") } });
  const kid = readdirSync(path.join(dir, "public")).find((f) => f.endsWith(".pem"))!.replace(/\.pem$/, "");
  return { dir, kid, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** An admin token as an operator makes one for KEYS_ADMIN_TOKEN: pskadm_ and 43 base64url characters. */
export const newAdminToken = () => `pskadm_${randomBytes(32).toString("base64url")}`;

/** A call to a key service's admin API (a published loopback port or a URL): status and JSON body. */
export async function admin(base: string, token: string, method: string, pathname: string, body?: unknown) {
  const res = await fetch(`${base}${pathname}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** One HTTP request to a published loopback port: status, headers, body text. */
export async function http(port: number, method: string, pathname: string, key?: string, body?: unknown) {
  const res = await fetch(`http://127.0.0.1:${port}${pathname}`, {
    method,
    headers: {
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/**
 * What a test made, removed in reverse order by `removeAll` (its afterAll), whatever happened.
 * Only these names are ever removed: nothing another run or an operator made.
 */
export class Made {
  private readonly items: { kind: "container" | "pod" | "network" | "volume" | "secret"; name: string }[] = [];
  add(kind: Made["items"][number]["kind"], name: string): string {
    this.items.push({ kind, name });
    return name;
  }
  async removeAll(): Promise<string[]> {
    const failures: string[] = [];
    for (const { kind, name } of this.items.reverse()) {
      const args =
        kind === "container" ? ["rm", "-f", "-t", "5", "--ignore", name]
        : kind === "pod" ? ["pod", "rm", "-f", "-t", "5", "--ignore", name]
        : kind === "network" ? ["network", "rm", "-f", name]
        : kind === "volume" ? ["volume", "rm", "-f", name]
        : ["secret", "rm", name];
      const exists =
        kind === "container" ? ["container", "exists", name]
        : kind === "pod" ? ["pod", "exists", name]
        : kind === "network" ? ["network", "exists", name]
        : kind === "volume" ? ["volume", "exists", name]
        : ["secret", "inspect", name];
      if ((await podman(exists, { allowFail: true })).code !== 0) continue;
      const r = await podman(args, { allowFail: true });
      if (r.code !== 0) failures.push(`${kind} ${name}: ${r.stderr.trim()}`);
    }
    this.items.length = 0;
    return failures;
  }
}

/** A name no other run uses: prefix + random suffix. */
export const uniqueName = (prefix: string) => `${prefix}-${Math.random().toString(36).slice(2, 8)}`;
