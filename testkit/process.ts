import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import type { Readable } from "node:stream";
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
 * CI's REDIS_URL, so a test only reaches the Redis it started. Its stdout is a pipe this process
 * reads, or the descriptor `opts.stdout` (testkit/output-faults.ts), and its stdin a pipe when
 * `opts.stdin` is set.
 */
export function launchNode(entry: string, env: Record<string, string>, args: string[] = [], opts: { stdout?: number; stdin?: "pipe" } = {}): Launched {
  const { REDIS_URL: _never, ...inherited } = process.env;
  const child = spawn(process.execPath, [entry, ...args], {
    cwd: REPO_ROOT,
    env: { ...inherited, ...env },
    stdio: [opts.stdin ?? "ignore", opts.stdout ?? "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  let all = "";
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => ((stdout += chunk), (all += chunk)));
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => ((stderr += chunk), (all += chunk)));
  const exited = new Promise<Exit>((resolve) => child.once("close", (code) => resolve({ code, stdout, stderr })));
  return { child, output: () => all, exited };
}

/**
 * Resolves once `launched` answers `url`/healthz (a process that hangs keeps a connection it
 * accepted unanswered: each try gives up after 2 s); rejects with its output if it exits first or
 * does not listen within 20 s (then it is killed). `what` names it in the error.
 */
export async function untilListening(launched: Launched, url: string, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (launched.child.exitCode !== null) throw new Error(`${what} exited at start: ${launched.output()}`);
    try {
      await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2_000) });
      return;
    } catch {
      if (Date.now() > deadline) {
        launched.child.kill("SIGKILL");
        throw new Error(`${what} did not listen: ${launched.output()}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** How a child process ended: its exit code, or the signal that ended it. */
export interface Ended {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/**
 * How `child` ends, if it has ended (and everything it wrote has been read) within `ms` from now;
 * rejects otherwise (the caller kills it). A hang guard for processes told to stop, not a speed
 * claim: `ms` is the process's own deadline.
 */
export function exitWithin(child: ChildProcess, ms: number): Promise<Ended> {
  const ended = new Promise<Ended>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`pid ${child.pid} still running ${ms} ms later`)), ms);
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal });
    });
  });
  // Awaited later, after what the test does meanwhile: not an unhandled rejection until then.
  ended.catch(() => {});
  return ended;
}

/** The reader of a child's stdout or stderr goes away (a log shipper, a terminal, `| head` exiting): its end of the pipe is closed. */
export async function closeReader(stream: Readable): Promise<void> {
  stream.destroy();
  if (!stream.closed) await once(stream, "close");
}
