import type { DatabaseSync, StatementSync } from "node:sqlite";

/** Results held at most (they are dropped together past it): bounded memory, and every page asked often stays. */
const MAX_RESULTS = 256;

/**
 * The results of the reader's statements since the database last changed, by statement and
 * parameters. Whether it changed is SQLite's own answer, `PRAGMA data_version`, which moves
 * whenever another connection (the writer thread, another process) commits to the file: a held
 * result is exactly what running the statement again would return, so reads stay as fresh as
 * before (an acknowledged create shows in every read that follows). The check costs a few µs;
 * the ListPets(20) statement it spares tens (docs/performance.md, "The pet service's read
 * path"). Pages asked again and again (the first page of ListPets above all) between writes are
 * read once.
 *
 * Callers share a held result: they must not change it.
 */
export class ReadCache<T> {
  private readonly dataVersion: StatementSync;
  private version: unknown;
  private readonly results = new Map<string, T>();

  constructor(reader: DatabaseSync) {
    this.dataVersion = reader.prepare("PRAGMA data_version");
    this.dataVersion.setReturnArrays(true);
  }

  /** The result held for `key` while the database is unchanged, else `read()`'s (then held). */
  get(key: string, read: () => T): T {
    const [version] = this.dataVersion.get() as unknown as [unknown];
    if (version !== this.version) {
      this.results.clear();
      this.version = version;
    }
    let result = this.results.get(key);
    if (result === undefined) {
      result = read();
      if (this.results.size >= MAX_RESULTS) this.results.clear();
      this.results.set(key, result);
    }
    return result;
  }
}
