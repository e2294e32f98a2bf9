import pino, { type DestinationStream, type Logger } from "pino";
import { ConfigError } from "./config.ts";
import { logCorrelation } from "./tracing/spans.ts";

export type { Logger };

type Destination = ReturnType<typeof pino.destination>;

/**
 * A destination written asynchronously and in batches: a line waits until 4 KiB are pending or
 * 10 ms have passed, so one write through libuv's thread pool carries many lines. With pino's
 * default (an asynchronous write per line whenever none is in flight) the pet service's ListPets
 * handler took 155 CPU-µs per call, with this 124, logging nothing 125 (npm run bench:handler;
 * README, Performance notes). pino writes what is pending synchronously when the process exits;
 * only a SIGKILL can lose lines, the last 10 ms of them at most.
 *
 * The 10 ms timer runs only while lines wait: sonic-boom's own `periodicFlush` flushes on an
 * interval whether anything is pending or not, an empty write through the thread pool every
 * 10 ms, which kept an idle process at about 2 % of a core (README, Performance notes).
 */
export function batchedDestination(dest: number | string): Destination {
  const stream = pino.destination({ dest, sync: false, minLength: 4096 });
  const write = stream.write.bind(stream);
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    timer = undefined;
    // A destroyed stream's flush throws; sonic-boom sets `destroyed` but its typings leave it out.
    if (!(stream as Destination & { destroyed?: boolean }).destroyed) stream.flush();
  };
  stream.write = (data: string) => {
    const accepted = write(data);
    timer ??= setTimeout(flush, 10).unref();
    return accepted;
  };
  return stream;
}

/**
 * A person at a terminal (`npm start`) reads lines, not JSON: pino-pretty, one line per entry
 * (time, level, process, message, then the fields), written synchronously so the last lines
 * before an exit show. Anything else (a pipe, a file, a container log) gets JSON as before.
 */
const readable = process.stdout.isTTY
  ? (await import("pino-pretty")).default({ colorize: true, singleLine: true, sync: true, translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname" })
  : undefined;

let stdout: DestinationStream | undefined;
/** One per process, shared by every logger (one timer). */
const batchedStdout = (): DestinationStream => (stdout ??= readable ?? batchedDestination(1));

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
