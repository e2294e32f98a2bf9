import { renameSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";

/**
 * Writes a file so readers (gateways polling KEYS_DIR, the keys tooling reading what a gateway
 * published) see the old or the new content, never half of it: a temp file in the same
 * directory, then rename.
 */
export function writeFileAtomic(file: string, data: string, mode = 0o644): void {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  try {
    writeFileSync(tmp, data, { mode });
    renameSync(tmp, file);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}
