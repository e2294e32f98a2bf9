import { workerData } from "node:worker_threads";
import { openDurableWriter } from "../../../lib/sqlite.ts";
import { serveCalls } from "../../../lib/worker-calls.ts";
import { commitWrite, type WriteRequest, type WriteResult } from "./writes.ts";

/**
 * The registry's writer connection, in a worker thread of its own (SqliteKeyRegistry starts it
 * through WorkerCalls): lock waits and COMMIT fsyncs block this thread only.
 */
const { file } = workerData as { file: string };
const db = openDurableWriter(file);
serveCalls<WriteRequest | null, WriteResult>(
  (write) => (write === null ? undefined : commitWrite(db, write)),
  () => db.close(),
);
