import pino, { type DestinationStream, type Logger } from "pino";
import { ConfigError } from "./config.ts";
import { batchedDestination, type BatchedDestination } from "./log-destination.ts";
import { logCorrelation } from "./tracing/spans.ts";

export type { Logger };

/**
 * A person at a terminal (`npm start`) reads lines, not JSON: pino-pretty, one line per entry
 * (time, level, process, message, then the fields), written synchronously so the last lines
 * before an exit show. Anything else (a pipe, a file, a container log) gets JSON as before.
 */
const readable = process.stdout.isTTY
  ? (await import("pino-pretty")).default({ colorize: true, singleLine: true, sync: true, translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname" })
  : undefined;

// stderr carries what the logger could not write (log-destination.ts). Its first use puts a pipe in
// non-blocking mode (as reading isTTY above did for stdout), so no write to either ever waits for a reader.
void process.stderr;

let batched: BatchedDestination | undefined;
/** One per process, shared by every logger (one timer); named after the first. */
function stdoutDestination(name: string): DestinationStream {
  if (readable) return readable;
  if (!batched) {
    const destination = batchedDestination(1, name);
    // process.exit, the end of the event loop, an uncaught exception: what waits is written now or dropped and counted.
    process.once("exit", () => destination.final());
    batched = destination;
  }
  return batched;
}

/**
 * Writes the log lines still waiting, for at most `withinMs` (a reader that is slow); a reader that
 * has gone or a full disk ends it at once. Before an orderly process.exit (lib/exit.ts).
 */
export function flushLogs(withinMs: number): Promise<void> {
  return batched?.settle(withinMs) ?? Promise.resolve();
}

/**
 * What process.exit does with the lines still waiting, for an exit that bypasses it: written if
 * the output takes them now, otherwise dropped and counted on stderr; never a wait.
 */
export function finalLogs(): void {
  batched?.final();
}

/**
 * JSON logs on stdout (readable lines on a terminal). Credentials are redacted wherever they
 * could appear, so a log line never carries an API key. A line written while a request is
 * handled carries its requestId, traceId and spanId (lib/tracing/spans.ts).
 */
export function createLogger(name: string, level = process.env.LOG_LEVEL || "info"): Logger {
  // An empty LOG_LEVEL is unset, as for every variable; an unknown one is a configuration error
  // (pino's own throw was a stack trace: "default level:verbose must be included in custom levels").
  if (!Object.hasOwn(pino.levels.values, level.toLowerCase()) && level.toLowerCase() !== "silent") {
    throw new ConfigError("LOG_LEVEL", `must be one of ${Object.keys(pino.levels.values).join(", ")} or silent (got ${JSON.stringify(level)})`);
  }
  return pino(
    {
      name,
      level,
      mixin: logCorrelation,
      redact: {
        paths: ["req.headers.authorization", "headers.authorization", "authorization", "token", "apiKey"],
        censor: "[redacted]",
      },
    },
    stdoutDestination(name),
  );
}
