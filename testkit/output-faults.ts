import { execFileSync } from "node:child_process";
import { closeSync, constants, mkdtempSync, openSync, readSync, rmSync, writeSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fillUp, mountTmpfs } from "./mounts.ts";

/**
 * What a process's stdout can be when nobody takes its output (issue 36), as a descriptor to start
 * it with (launchNode's `opts.stdout`). A pipe whose reader has gone is closeReader() on the
 * child's own stdout (testkit/process.ts).
 */
export interface Output {
  fd: number;
  /** Closes this process's descriptors (after the child has ended). */
  close(): void | Promise<void>;
}

/** The line a process of ours says on stderr, at exit, about the log lines it had to drop (lib/log-destination.ts). */
export const droppedLines = (name: string, reason: string): RegExp =>
  new RegExp(`^${name}: \\d+ log lines? could not be written to stdout \\(${reason}\\) and (was|were) dropped$`, "m");

/**
 * A pipe already full, whose reader is alive and never reads: a write either takes nothing (EAGAIN)
 * or waits for ever. The child gets a blocking descriptor, as a shell or a supervisor hands one.
 * `drain()` reads what it holds now (a reader that was only slow), oldest bytes first.
 */
export function fullPipe(): Output & { drain(): Buffer } {
  const dir = mkdtempSync(path.join(os.tmpdir(), "full-pipe-"));
  const fifo = path.join(dir, "fifo");
  execFileSync("mkfifo", [fifo]);
  const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
  const writer = openSync(fifo, constants.O_WRONLY);
  const filler = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
  rmSync(dir, { recursive: true, force: true });
  const block = Buffer.alloc(4096, "#");
  try {
    for (;;) writeSync(filler, block);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EAGAIN") throw err;
  } finally {
    closeSync(filler);
  }
  return {
    fd: writer,
    drain() {
      const chunks: Buffer[] = [];
      const chunk = Buffer.alloc(65536);
      for (;;) {
        try {
          const n = readSync(reader, chunk);
          if (n === 0) break;
          chunks.push(Buffer.from(chunk.subarray(0, n)));
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === "EAGAIN") break;
          throw err;
        }
      }
      return Buffer.concat(chunks);
    },
    close() {
      closeSync(writer);
      closeSync(reader);
    },
  };
}

/** A file on a full disk, as far as a writer sees: every write fails with ENOSPC (/dev/full, which needs no mount). */
export function fullDisk(): Output {
  const fd = openSync("/dev/full", "w");
  return { fd, close: () => closeSync(fd) };
}

/** A file on a real full disk: a 1 MiB tmpfs mounted here (needs root: tests/faults) and filled to the last byte. */
export async function fileOnFullDisk(): Promise<Output> {
  const disk = await mountTmpfs(1 << 20);
  const fd = openSync(path.join(disk.dir, "stdout.log"), "a");
  fillUp(disk.dir);
  return {
    fd,
    async close() {
      closeSync(fd);
      await disk.unmount();
    },
  };
}
