import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";

const REPO_ROOT = path.resolve(import.meta.dirname, "..");

export interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A real process of ours, as operators run it: `node <entry>` from the repo root. */
export interface Launched {
  child: ChildProcess;
  /** Everything it wrote so far, stdout and stderr interleaved. */
  output(): string;
  exited: Promise<Exit>;
}

/**
 * Starts `entry` with `env` over this process's environment — never with the developer's or
 * CI's REDIS_URL, so a test only reaches the Redis it started.
 */
export function launchNode(entry: string, env: Record<string, string>, args: string[] = []): Launched {
  const { REDIS_URL: _never, ...inherited } = process.env;
  const child = spawn(process.execPath, [entry, ...args], {
    cwd: REPO_ROOT,
    env: { ...inherited, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  let all = "";
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => ((stdout += chunk), (all += chunk)));
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => ((stderr += chunk), (all += chunk)));
  const exited = new Promise<Exit>((resolve) => child.once("close", (code) => resolve({ code, stdout, stderr })));
  return { child, output: () => all, exited };
}
