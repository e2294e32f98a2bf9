import { once } from "node:events";
import { parentPort, Worker } from "node:worker_threads";

/**
 * Calls into a worker thread that owns something blocking (a synchronous SQLite writer: its
 * COMMIT waits for an fsync, a lock for busy_timeout), so the main thread's event loop never
 * waits for it. One call at a time runs in the worker, in the order made; each answer settles
 * its promise. The worker side is `serveCalls` in the module `url` names.
 */

/** An error as it crosses the thread boundary: its message and its `code` (a class does not cross). */
export interface WireError {
  message: string;
  code?: string;
}

type Answer<Res> = { id: number; value: Res } | { id: number; error: WireError };

export class WorkerCalls<Req, Res> {
  readonly #url: URL;
  readonly #workerData: unknown;
  #worker: Worker | undefined;
  readonly #waiting = new Map<number, { resolve(value: Res): void; reject(err: Error): void }>();
  /** The calls not answered yet, for close(). */
  readonly #pending = new Set<Promise<Res>>();
  #next = 0;

  constructor(url: URL, workerData: unknown) {
    this.#url = url;
    this.#workerData = workerData;
  }

  /** Runs `request` in the worker (started on the first call, again after it stopped). */
  call(request: Req): Promise<Res> {
    const worker = (this.#worker ??= this.#start());
    const id = ++this.#next;
    const answered = new Promise<Res>((resolve, reject) => {
      this.#waiting.set(id, { resolve, reject });
      if (this.#waiting.size === 1) worker.ref();
      worker.postMessage({ id, request });
    });
    this.#pending.add(answered);
    const forget = () => void this.#pending.delete(answered);
    answered.then(forget, forget);
    return answered;
  }

  /** Once the calls made so far are answered, lets the worker release what it holds (serveCalls' `close`) and end. */
  async close(): Promise<void> {
    await Promise.allSettled(this.#pending);
    const worker = this.#worker;
    if (!worker) return;
    this.#worker = undefined;
    const exited = once(worker, "exit");
    // Held until it has ended: the caller awaits that.
    worker.ref();
    worker.postMessage({ close: true });
    await exited;
  }

  #start(): Worker {
    const worker = new Worker(this.#url, { workerData: this.#workerData });
    // Idle, it keeps no process alive; while a call is under way it does.
    worker.unref();
    let failure: Error | undefined;
    worker.on("message", (answer: Answer<Res>) => {
      if ("error" in answer) this.#settle(answer.id, undefined, errorOf(answer.error));
      else this.#settle(answer.id, answer.value);
    });
    worker.on("error", (err: unknown) => (failure = err instanceof Error ? err : new Error(String(err))));
    worker.on("exit", () => {
      if (this.#worker === worker) this.#worker = undefined;
      const stopped = failure ?? new Error("the worker thread stopped");
      for (const id of [...this.#waiting.keys()]) this.#settle(id, undefined, stopped);
    });
    return worker;
  }

  #settle(id: number, value: Res | undefined, error?: Error): void {
    const waiting = this.#waiting.get(id);
    if (!waiting) return;
    this.#waiting.delete(id);
    if (this.#waiting.size === 0) this.#worker?.unref();
    if (error) waiting.reject(error);
    else waiting.resolve(value!);
  }
}

/**
 * The worker side of WorkerCalls: answers each call with `handle`'s value, or the error it threw.
 * When the main thread closes, `close` runs and the thread ends.
 */
export function serveCalls<Req, Res>(handle: (request: Req) => Res, close: () => void): void {
  const port = parentPort!;
  port.on("message", (message: { id: number; request: Req } | { close: true }) => {
    if ("close" in message) {
      close();
      port.close();
      return;
    }
    const { id, request } = message;
    let answer: Answer<Res>;
    try {
      answer = { id, value: handle(request) };
    } catch (err) {
      answer = { id, error: wireError(err) };
    }
    port.postMessage(answer);
  });
}

export function wireError(err: unknown): WireError {
  const { message, code } = (err ?? {}) as { message?: unknown; code?: unknown };
  return { message: typeof message === "string" ? message : String(err), ...(typeof code === "string" && { code }) };
}

/** The error a WireError describes, again an Error with its `code`. */
export function errorOf({ message, code }: WireError): Error {
  return Object.assign(new Error(message), code !== undefined && { code });
}
