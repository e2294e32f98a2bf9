import pino, { type DestinationStream, type Logger } from "pino";
import { ConfigError } from "./config.ts";
import { logCorrelation } from "./tracing/spans.ts";

export type { Logger };

/**
 * stdout, written asynchronously and in batches: a line waits until 4 KiB are pending or 10 ms
 * have passed, so one write through libuv's thread pool carries many lines. With pino's default
 * (an asynchronous write per line whenever none is in flight) the pet service's ListPets handler
 * took 155 CPU-µs per call, with this 124, logging nothing 125 (npm run bench:handler; README, Performance notes).
 * pino writes what is pending synchronously when the process exits; only a SIGKILL can lose
 * lines, the last 10 ms of them at most. One per process, shared by every logger (one timer).
 */
export const BATCHED_DESTINATION = { sync: false, minLength: 4096, periodicFlush: 10 } as const;

/**
 * A person at a terminal (`npm start`) reads lines, not JSON: pino-pretty, one line per entry
 * (time, level, process, message, then the fields), written synchronously so the last lines
 * before an exit show. Anything else (a pipe, a file, a container log) gets JSON as before.
 */
const readable = process.stdout.isTTY
  ? (await import("pino-pretty")).default({ colorize: true, singleLine: true, sync: true, translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname" })
  : undefined;

let stdout: DestinationStream | undefined;
const batchedStdout = (): DestinationStream => (stdout ??= readable ?? pino.destination({ dest: 1, ...BATCHED_DESTINATION }));

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
    batchedStdout(),
  );
}
