import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, openSync, readFileSync } from "node:fs";
import path from "node:path";
import { childrenCpuMicros } from "../testkit/cpu.ts";

/** Processes the benchmarks start: Node services (logs to a file) and load tools (output captured). */

export const ROOT = path.resolve(import.meta.dirname, "..");

export const log = (message: string): void => void process.stderr.write(`[bench] ${message}\n`);

export interface Proc {
  name: string;
  child: ChildProcess;
  pid: number;
  logFile: string;
  /** SIGTERM, then SIGKILL after 10 s; resolves when it is gone. */
  stop(): Promise<void>;
}

const running = new Set<Proc>();

/** Stops every process spawnNode started that is still running. */
export const stopAll = (): Promise<unknown> => Promise.all([...running].map((p) => p.stop()));

/** Only what a service needs from our environment: no REDIS_URL, PETS_DB, … leaking in. */
export function baseEnv(): Record<string, string> {
  return Object.fromEntries(
    ["PATH", "HOME", "TMPDIR", "LANG", "NODE_OPTIONS"].flatMap((k) => (process.env[k] ? [[k, process.env[k]!]] : [])),
  );
}

/**
 * `node [nodeArgs] script` in `root` (this checkout unless another is given) with
 * NODE_ENV=production, stdout and stderr to dir/name.log.
 */
export function spawnNode(name: string, script: string, env: Record<string, string>, dir: string, nodeArgs: string[] = [], root = ROOT): Proc {
  return spawnProcess(name, process.execPath, [...nodeArgs, script], { NODE_ENV: "production", ...env }, dir, root);
}

/** Any program as a service under test: our environment's basics plus `env`, output to dir/name.log. */
export function spawnProcess(name: string, command: string, args: string[], env: Record<string, string>, dir: string, cwd = ROOT): Proc {
  const logFile = path.join(dir, `${name}.log`);
  const fd = openSync(logFile, "a");
  const child = spawn(command, args, { cwd, env: { ...baseEnv(), ...env }, stdio: ["ignore", fd, fd] });
  closeSync(fd);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const proc: Proc = {
    name,
    child,
    pid: child.pid!,
    logFile,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill("SIGTERM");
        const force = setTimeout(() => child.kill("SIGKILL"), 10_000);
        await exited;
        clearTimeout(force);
      }
      running.delete(proc);
    },
  };
  running.add(proc);
  return proc;
}

const tail = (file: string): string => {
  try {
    return readFileSync(file, "utf8").split("\n").slice(-20).join("\n");
  } catch {
    return "";
  }
};

/** Polls `ready` every 100 ms until it holds; fails early if the process exits. */
export async function waitFor(proc: Proc, what: string, ready: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (proc.child.exitCode !== null) throw new Error(`${proc.name} exited at start:\n${tail(proc.logFile)}`);
    if (await ready().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`${proc.name}: ${what} not reached in ${timeoutMs} ms:\n${tail(proc.logFile)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface ToolRun {
  stdout: string;
  /** CPU (user + system) the tool used, in µs. */
  cpuUs: number;
}

/**
 * Runs a load tool to its end and measures its CPU: a shell runs it, waits for it, then prints its
 * own /proc stat line, whose cutime + cstime are the tool's CPU (the shell's own is negligible).
 */
export function runTool(command: string, args: string[], timeoutMs: number): Promise<ToolRun> {
  const script = `"$@"; status=$?; printf '\\n@@stat %s\\n' "$(cat /proc/$$/stat)"; exit $status`;
  const child = spawn("sh", ["-c", script, "sh", command, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const killer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(killer);
      const at = stdout.lastIndexOf("\n@@stat ");
      if (code !== 0 || at < 0) {
        reject(new Error(`${command} ${args.join(" ")} failed (exit ${code}):\n${stderr}${stdout}`));
        return;
      }
      resolve({ stdout: stdout.slice(0, at), cpuUs: childrenCpuMicros(stdout.slice(at + 8).trim()) });
    });
  });
}
