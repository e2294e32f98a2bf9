import { readFileSync } from "node:fs";

/** A file's text, or undefined when it does not exist (KEYS_DIR's files are optional); other errors throw. */
export function readOptionalFile(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
}
