import type { DestinationStream } from "pino";
import SonicBoom from "sonic-boom";
import { stderrLine } from "./stderr-line.ts";

/** A line waits until this many bytes are pending or BATCH_MS have passed: one write carries many lines. */
const BATCH_BYTES = 4096;
const BATCH_MS = 10;
/**
 * Lines that would take the bytes waiting past this are dropped and counted: an output that takes
 * nothing (a pipe nobody reads, a full disk) holds this much memory at most. Generous, because a
 * healthy output falls behind too: sonic-boom writes 16 KiB per turn of the event loop at most, so
 * a burst of more than about 60 lines per turn queues (100 lines per turn, 50,000 in all: a 1 MiB
 * bound dropped 4,857 of them).
 */
const MAX_PENDING_BYTES = 16 << 20;
/** Write errors after which the output will never take a byte again: its reader has gone. */
const READER_GONE = new Set(["EPIPE", "ECONNRESET", "ENOTCONN", "EBADF"]);

/** Log lines written in batches (pino's destination), that never makes its process wait for its output. */
export interface BatchedDestination extends DestinationStream {
  /** Lines accepted that could not be written (and never will be), so far. */
  readonly dropped: number;
  /** Writes the lines waiting; resolves once they are written, once the output fails, or after `withinMs`, whichever comes first. */
  settle(withinMs: number): Promise<void>;
  /**
   * At exit: writes what the output takes now, in one pass that neither waits nor retries (no
   * timer runs any more); drops and counts the rest, and says on stderr what it dropped. Only the
   * first call writes.
   */
  final(): void;
}

/**
 * A destination written asynchronously and in batches: a line waits until 4 KiB are pending or
 * 10 ms have passed, so one write through libuv's thread pool carries many. With pino's default
 * (an asynchronous write per line whenever none is in flight) the pet service's ListPets handler
 * took 155 CPU-µs per call, with this 124, logging nothing 125 (npm run bench:handler;
 * docs/performance.md, "The log destination"). The 10 ms timer runs only while lines wait: sonic-boom's own
 * `periodicFlush` writes on an interval whether anything is pending or not, an empty write through
 * the thread pool every 10 ms, which kept an idle process at about 2 % of a core.
 *
 * Whatever happens to the output, the process never waits for it (issue 36): a reader that has gone
 * (EPIPE) drops every line from then on; a full disk or a pipe nobody reads keeps at most 16 MiB
 * waiting and drops what comes beyond; at exit `final()` writes what it can at once. Each drop is
 * counted and said on stderr: when the output first fails, and the count at exit. sonic-boom 5's
 * synchronous flush throws on an error where 4.x retried it every 100 ms forever; an EAGAIN (a full
 * pipe) is not retried once the process exits.
 *
 * `name` starts those stderr lines (the process's name).
 */
export function batchedDestination(dest: number | string, name = "logger"): BatchedDestination {
  const output = dest === 1 ? "stdout" : String(dest);
  let exiting = false;
  const boom = new SonicBoom({ dest, sync: false, minLength: BATCH_BYTES, maxLength: MAX_PENDING_BYTES, retryEAGAIN: () => !exiting });
  // The byte length of each line accepted and not yet written, oldest first from `head`; `partial`
  // bytes of the oldest one are already out. Lines are counted by these when they are dropped.
  const pending: number[] = [];
  let head = 0;
  let partial = 0;
  let dropped = 0;
  let failure: string | undefined;
  let gone = false;
  let refused = false;
  let finished = false;
  let timer: NodeJS.Timeout | undefined;
  /** Ends the settle() in progress, if any. */
  let settled: (() => void) | undefined;
  let settling: Promise<void> | undefined;

  const waiting = () => pending.length - head;
  /** The lines holding the last `bytes` of what waits (a line partly written among them). */
  const linesIn = (bytes: number) => {
    let lines = 0;
    for (let i = pending.length - 1; i >= head && bytes > 0; i--, lines++) bytes -= pending[i]!;
    return lines;
  };
  const forget = () => {
    pending.length = head = partial = 0;
  };
  const fail = (reason: string) => {
    if (failure === undefined) stderrLine(`${name}: cannot write log lines to ${output} (${reason}); the lines it does not take are dropped and counted`);
    failure = reason;
  };

  boom.on("write", (n: number) => {
    partial += n;
    while (head < pending.length && pending[head]! <= partial) partial -= pending[head++]!;
    if (head === pending.length) forget();
    else if (head >= 1024) (pending.splice(0, head), (head = 0));
  });
  // sonic-boom says so while write() runs, when the line would take the bytes waiting past maxLength.
  boom.on("drop", () => (refused = true));
  boom.on("error", (err: NodeJS.ErrnoException) => {
    fail(err.code ?? err.message);
    if (READER_GONE.has(err.code ?? "")) {
      gone = true;
      dropped += waiting();
      forget();
      clearTimeout(timer);
      boom.destroy();
    }
    settled?.();
  });
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    if (!gone) boom.flush();
  };

  return {
    get dropped() {
      return dropped;
    },
    write(line: string) {
      if (gone || finished) {
        dropped++;
        return true;
      }
      boom.write(line);
      if (refused) {
        refused = false;
        dropped++;
        fail(`${MAX_PENDING_BYTES >> 20} MiB waiting`);
      } else pending.push(Buffer.byteLength(line));
      timer ??= setTimeout(flush, BATCH_MS).unref();
      return true;
    },
    settle(withinMs) {
      if (gone || waiting() === 0) return Promise.resolve();
      return (settling ??= new Promise<void>((resolve) => {
        // 'drain' comes once a write is done with under 4 KiB waiting, which sonic-boom keeps for the next batch.
        const next = () => (waiting() > 0 ? boom.flush() : settled!());
        const limit = setTimeout(() => settled!(), withinMs);
        settled = () => {
          settled = settling = undefined;
          clearTimeout(limit);
          boom.off("drain", next);
          resolve();
        };
        boom.on("drain", next);
        flush();
      }));
    },
    final() {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      if (!gone && waiting() > 0) {
        exiting = true;
        try {
          boom.flushSync();
        } catch (err) {
          fail((err as NodeJS.ErrnoException).code ?? (err as Error).message);
          dropped += linesIn(unwritten(boom));
        }
      }
      if (dropped > 0) stderrLine(`${name}: ${dropped} log ${dropped === 1 ? "line" : "lines"} could not be written to ${output} (${failure}) and ${dropped === 1 ? "was" : "were"} dropped`);
    },
  };
}

/** sonic-boom's count of the bytes it holds unwritten: its synchronous flush reports no progress of its own when it throws. */
const unwritten = (boom: SonicBoom) => (boom as unknown as { _len: number })._len;
