import { ignoreStderrErrors, stderrLine } from "./stderr-line.ts";

/**
 * For a command-line tool, whose stdout carries its result (a key shown once, a table, a summary):
 * an output its reader has left (EPIPE) or a full disk refuses (ENOSPC) fails the command with one
 * line on stderr and exit code 1, at once, instead of Node's stack trace for an unhandled 'error';
 * stderr failing too leaves nobody to tell (the exit code still says how the command went). A pipe
 * that is only full is waited for, as every command-line tool does (a person paging with `less`
 * reads slowly); no signal is handled, so SIGTERM or Ctrl-C still ends the tool at once.
 */
export function failOnOutputError(tool: string): void {
  process.stdout.on("error", (err: NodeJS.ErrnoException) => {
    stderrLine(`${tool}: the output could not be written to stdout (${err.code ?? err.message})`);
    process.exit(1);
  });
  ignoreStderrErrors();
}
