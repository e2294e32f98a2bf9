import pino, { type Logger } from "pino";

export type { Logger };

/**
 * JSON logs on stdout. Credentials are redacted wherever they could appear, so a log line
 * never carries an API key.
 */
export function createLogger(name: string, level = process.env.LOG_LEVEL ?? "info"): Logger {
  return pino({
    name,
    level,
    redact: {
      paths: ["req.headers.authorization", "headers.authorization", "authorization", "token", "apiKey"],
      censor: "[redacted]",
    },
  });
}
