import { afterEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../../lib/config.ts";
import { createLogger } from "../../../lib/logger.ts";
import { fullDisk, fullPipe } from "../../../testkit/output-faults.ts";
import { closeReader, exitWithin, launchNode, type Launched } from "../../../testkit/process.ts";

describe("createLogger and LOG_LEVEL", () => {
  const saved = process.env.LOG_LEVEL;
  afterEach(() => {
    if (saved === undefined) delete process.env.LOG_LEVEL;
    else process.env.LOG_LEVEL = saved;
  });

  it("treats an empty LOG_LEVEL as unset (info), like every other variable", () => {
    process.env.LOG_LEVEL = "";
    expect(createLogger("test").level).toBe("info");
  });

  it.each(["trace", "debug", "info", "warn", "error", "fatal", "silent"])("accepts LOG_LEVEL=%s", (level) => {
    process.env.LOG_LEVEL = level;
    expect(createLogger("test").level).toBe(level);
  });

  it.each(["verbose", " info", "3", "constructor"])("refuses LOG_LEVEL=%j with one line naming the variable", (level) => {
    process.env.LOG_LEVEL = level;
    expect(() => createLogger("test")).toThrowError(ConfigError);
    expect(() => createLogger("test")).toThrowError(/^invalid configuration: LOG_LEVEL /);
  });
});

describe("a process whose stdout takes nothing still exits (issue 36)", () => {
  /** A hang guard: a healthy exit takes milliseconds; the bug was never. */
  const EXIT_BOUND_MS = 10_000;
  const started: Launched[] = [];
  // One that hangs (the bug) is killed once its test has failed.
  afterEach(() => {
    for (const { child } of started.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  /** tests/unit/lib/fixtures/log-then-exit.ts: logs LINES lines once told to on stdin, then exits. */
  const probe = (env: Record<string, string> = {}, stdout?: number): Launched => {
    const run = launchNode("tests/unit/lib/fixtures/log-then-exit.ts", { LOG_LEVEL: "info", ...env }, [], { stdin: "pipe", ...(stdout !== undefined && { stdout }) });
    started.push(run);
    return run;
  };
  const lastLines = (stdout: string) => stdout.split("\n").filter((l) => l.includes('"msg":"last lines"'));

  it("a reader that reads gets every last line, logged and followed by process.exit(0) in the same tick", async () => {
    const run = probe({ LINES: "20" });
    run.child.stdin!.end("go\n");
    const { code, stdout, stderr } = await run.exited;
    expect(code).toBe(0);
    expect(lastLines(stdout)).toHaveLength(20);
    expect(stderr).toBe("");
  });

  it("its reader has exited (EPIPE): the last line and process.exit(0) in the same tick, the line dropped and said so on stderr", async () => {
    const run = probe();
    await closeReader(run.child.stdout!);
    const ended = exitWithin(run.child, EXIT_BOUND_MS);
    run.child.stdin!.end("go\n");
    expect(await ended).toEqual({ code: 0, signal: null });
    expect((await run.exited).stderr).toBe(
      "probe: cannot write log lines to stdout (EPIPE); the lines it does not take are dropped and counted\n" +
        "probe: 1 log line could not be written to stdout (EPIPE) and was dropped\n",
    );
  });

  it("a full pipe nobody reads (EAGAIN): 18 MB of last lines, all dropped and counted, 16 MiB of them held at most", async () => {
    const pipe = fullPipe();
    try {
      const run = probe({ LINES: "60000" }, pipe.fd);
      const ended = exitWithin(run.child, EXIT_BOUND_MS);
      run.child.stdin!.end("go\n");
      expect(await ended).toEqual({ code: 0, signal: null });
      expect((await run.exited).stderr).toBe(
        "probe: cannot write log lines to stdout (16 MiB waiting); the lines it does not take are dropped and counted\n" +
          "probe: 60000 log lines could not be written to stdout (EAGAIN) and were dropped\n",
      );
    } finally {
      pipe.close();
    }
  });

  it("a file on a full disk (ENOSPC): the last line dropped and said so", async () => {
    const disk = fullDisk();
    try {
      const run = probe({}, disk.fd);
      const ended = exitWithin(run.child, EXIT_BOUND_MS);
      run.child.stdin!.end("go\n");
      expect(await ended).toEqual({ code: 0, signal: null });
      expect((await run.exited).stderr).toMatch(/^probe: 1 log line could not be written to stdout \(ENOSPC\) and was dropped$/m);
    } finally {
      disk.close();
    }
  });

  it("a reader that is behind (its pipe full) gets every last line of an orderly exit (lib/exit.ts), as it reads", async () => {
    const pipe = fullPipe();
    try {
      const run = probe({ LINES: "20", ORDERLY: "1" }, pipe.fd);
      const ended = exitWithin(run.child, EXIT_BOUND_MS);
      run.child.stdin!.end("go\n");
      let read = "";
      while (run.child.exitCode === null) {
        read += pipe.drain().toString("utf8");
        await new Promise((r) => setTimeout(r, 20));
      }
      read += pipe.drain().toString("utf8");
      expect(await ended).toEqual({ code: 0, signal: null });
      expect(lastLines(read)).toHaveLength(20);
      expect((await run.exited).stderr).toBe("");
    } finally {
      pipe.close();
    }
  });
});
