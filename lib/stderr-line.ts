import { writeSync } from "node:fs";

/**
 * Writes `text` and a newline to stderr if stderr takes it now: one attempt, never a wait, never a
 * throw. For what is said when an output fails (the logger's stdout, a tool's): fd 2 is a terminal,
 * a file, or a pipe Node has put in non-blocking mode (it does on process.stderr's first use); when
 * stderr fails too, nobody is left to tell.
 */
export function stderrLine(text: string): void {
  try {
    writeSync(2, `${text}\n`);
  } catch {
    // Nobody left to tell.
  }
}

/** stderr failing (its reader gone, a full disk) leaves nobody to tell: not Node's unhandled 'error' (a stack trace, and the process ends). */
export function ignoreStderrErrors(): void {
  process.stderr.on("error", () => {
    // Nobody left to tell.
  });
}
