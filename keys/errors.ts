/** Bad command line: the CLI prints the message and exits 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** The command could not be carried out: the CLI prints the message and exits 1. */
export class KeysError extends Error {
  override name = "KeysError";
}
