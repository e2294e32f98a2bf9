import sqlite3 from "sqlite3";

/** The sqlite3 callback API as promises, shared by the SQLite store's modules. */

/** Waits this long for another connection's lock (a backup, an operator's shell) instead of failing at once. */
const BUSY_TIMEOUT_MS = 5_000;

/** Opens `file`, creating it when missing unless `mode` says otherwise (sqlite3.OPEN_READONLY, …). */
export async function openDatabase(file: string, mode = sqlite3.OPEN_READWRITE | sqlite3.OPEN_CREATE | sqlite3.OPEN_FULLMUTEX): Promise<sqlite3.Database> {
  const db = await new Promise<sqlite3.Database>((resolve, reject) => {
    const opened: sqlite3.Database = new sqlite3.Database(file, mode, (err) => (err ? reject(err) : resolve(opened)));
  });
  db.configure("busyTimeout", BUSY_TIMEOUT_MS);
  return db;
}

export function closeDatabase(db: sqlite3.Database): Promise<void> {
  return new Promise((resolve, reject) => db.close((err) => (err ? reject(err) : resolve())));
}

export function exec(db: sqlite3.Database, sql: string): Promise<void> {
  return new Promise((resolve, reject) => db.exec(sql, (err) => (err ? reject(err) : resolve())));
}

export function run(db: sqlite3.Database, sql: string, params: unknown[] = []): Promise<void> {
  return new Promise((resolve, reject) => db.run(sql, params, (err) => (err ? reject(err) : resolve())));
}

export function all<T>(db: sqlite3.Database, sql: string, params: unknown[] = []): Promise<T[]> {
  return new Promise((resolve, reject) => db.all<T>(sql, params, (err, rows) => (err ? reject(err) : resolve(rows))));
}

export function prepare(db: sqlite3.Database, sql: string): Promise<sqlite3.Statement> {
  return new Promise((resolve, reject) => {
    const statement = db.prepare(sql, (err) => (err ? reject(err) : resolve(statement)));
  });
}

/** Runs a prepared statement to completion (all, not get: get would leave it mid-way); its rows. */
export function allPrepared<T>(statement: sqlite3.Statement, params: unknown[] = []): Promise<T[]> {
  return new Promise((resolve, reject) => statement.all<T>(params, (err, rows) => (err ? reject(err) : resolve(rows))));
}
