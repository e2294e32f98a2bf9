import { finalLogs, flushLogs, type Logger } from "./logger.ts";

/** How long an orderly exit waits for a slow reader to take the last log lines; one that has gone, or a full disk, costs nothing. */
const LAST_LINES_MS = 1_000;

/** The end of an orderly shutdown: the last log lines written (waiting 1 s at most), then process.exit(code). */
export async function exitWhenLogged(code: number): Promise<never> {
  await flushLogs(LAST_LINES_MS);
  process.exit(code);
}

/**
 * The backstop of a shutdown that `signal` started: `ms` later, whatever is still running, the
 * process says so, writes the log lines its output takes at once, and ends as `signal`'s default
 * action would (exit status 128 + the signal's number, 143 for SIGTERM). Not process.exit: it waits
 * for every busy thread of libuv's pool, and a thread held by a database's lock wait, a DNS lookup
 * or a write to a blocking descriptor would keep the process past any deadline.
 */
export function startShutdownDeadline(ms: number, logger: Logger, signal: NodeJS.Signals): void {
  setTimeout(() => {
    logger.error({ afterMs: ms }, "shutdown did not finish; exiting");
    finalLogs();
    // With no listener left, Node restores the signal's default action.
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  }, ms).unref();
}
