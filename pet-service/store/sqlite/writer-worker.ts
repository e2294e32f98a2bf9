import { workerData } from "node:worker_threads";
import { openDurableWriter } from "../../../lib/sqlite.ts";
import { serveCalls } from "../../../lib/worker-calls.ts";
import { commitBatch, prepareWrites, type BatchResult, type WriteRequest } from "./commit-batch.ts";

/**
 * The SQLite store's writer connection, in a worker thread of its own (SqlitePetStore starts it
 * through WorkerCalls): each call is one group commit (commit-batch.ts), whose statements, lock
 * waits and COMMIT fsync block this thread only, never the service's event loop.
 */
const { file } = workerData as { file: string };
const db = openDurableWriter(file, { readBigInts: true });
const statements = prepareWrites(db);
serveCalls<WriteRequest[], BatchResult>(
  (writes) => commitBatch(db, statements, writes),
  () => db.close(),
);
