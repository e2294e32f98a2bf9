import { describe, expect, it } from "vitest";
import { fullDisk, fullPipe } from "../../../testkit/output-faults.ts";
import { closeReader, launchNode } from "../../../testkit/process.ts";

// Issue 36, for the command-line tools: their stdout carries the result, so an output nobody can
// take fails the command with one line on stderr and exit code 1, never Node's stack trace; a pipe
// that is only full is waited for, as by any command-line tool, and a signal still ends the tool.
describe.each([
  ["keys", "tools/keys.ts"],
  ["pets-db", "tools/pets-db.ts"],
])("npm run %s -- help", { timeout: 30_000 }, (tool, entry) => {
  it("stdout's reader gone (EPIPE): one line on stderr and exit code 1", async () => {
    const run = launchNode(entry, {}, ["help"]);
    await closeReader(run.child.stdout!);
    const { code, stderr } = await run.exited;
    expect({ code, stderr }).toEqual({ code: 1, stderr: `${tool}: the output could not be written to stdout (EPIPE)\n` });
  });

  it("stdout a file on a full disk (ENOSPC): one line on stderr and exit code 1", async () => {
    const disk = fullDisk();
    try {
      const { code, stderr } = await launchNode(entry, {}, ["help"], { stdout: disk.fd }).exited;
      expect({ code, stderr }).toEqual({ code: 1, stderr: `${tool}: the output could not be written to stdout (ENOSPC)\n` });
    } finally {
      disk.close();
    }
  });

  it("stdout a full pipe: waits for its reader, and SIGTERM ends it at once", async () => {
    const pipe = fullPipe();
    try {
      const run = launchNode(entry, {}, ["help"], { stdout: pipe.fd });
      // Long after its work: its usage text waits in the process for the pipe to take it.
      await new Promise((r) => setTimeout(r, 1_000));
      expect(run.child.exitCode).toBeNull();
      run.child.kill("SIGTERM");
      expect(await run.exited).toMatchObject({ code: null, stderr: "" });
      expect(run.child.signalCode).toBe("SIGTERM");
    } finally {
      pipe.close();
    }
  });
});
