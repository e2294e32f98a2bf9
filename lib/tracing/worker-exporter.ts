import { Worker } from "node:worker_threads";
import type { Attributes, SpanContext } from "@opentelemetry/api";
import { ExportResultCode, type ExportResult } from "@opentelemetry/core";
import type { ReadableSpan, SpanExporter } from "@opentelemetry/sdk-trace";
import type { OtlpProtocol } from "./config.ts";

/** Where the worker sends spans. */
export interface ExportTarget {
  url: string;
  protocol: OtlpProtocol;
}

/** A span context as a message carries it: the trace state as its header value (a class does not cross). */
export type WireContext = Omit<SpanContext, "traceState"> & { traceState?: string };

/** A finished span as a message carries it: data only, its resource sent once per batch. */
export type WireSpan = Omit<ReadableSpan, "spanContext" | "parentSpanContext" | "links" | "instrumentationScope" | "resource"> & {
  context: WireContext;
  parent?: WireContext;
  links: (Omit<ReadableSpan["links"][number], "context"> & { context: WireContext })[];
  scope: ReadableSpan["instrumentationScope"];
};

export type ToWorker =
  | { kind: "export"; id: number; resource: { attributes: Attributes; schemaUrl?: string }; spans: WireSpan[] }
  | { kind: "shutdown"; id: number };
export interface FromWorker {
  id: number;
  /** Absent when the export (or shutdown) succeeded. */
  error?: string;
}

const wire = ({ traceState, ...rest }: SpanContext): WireContext => ({ ...rest, ...(traceState && { traceState: traceState.serialize() }) });

function wireSpan(span: ReadableSpan): WireSpan {
  const { parentSpanContext } = span;
  // A span is a class instance: its fields are copied by name (a spread would miss getters).
  return {
    name: span.name,
    kind: span.kind,
    startTime: span.startTime,
    endTime: span.endTime,
    duration: span.duration,
    ended: span.ended,
    status: span.status,
    attributes: span.attributes,
    events: span.events,
    droppedAttributesCount: span.droppedAttributesCount,
    droppedEventsCount: span.droppedEventsCount,
    droppedLinksCount: span.droppedLinksCount,
    context: wire(span.spanContext()),
    ...(parentSpanContext && { parent: wire(parentSpanContext) }),
    links: span.links.map((link) => ({ ...link, context: wire(link.context) })),
    scope: { ...span.instrumentationScope },
  };
}

/**
 * OpenTelemetry's OTLP/HTTP exporter, run in a worker thread of its own (export-worker.ts). Measured
 * with the processes restarted every round (docs/performance.md, Tracing and TLS cost): an HTTP/1.1 request every
 * 5 s from a service's main thread, as the exporter's batches are, added about 15 CPU-µs to every
 * request that process served, and the same request from a worker thread nothing measurable. Most
 * likely, the client's sockets and streams share Node's stream code with the server's, whose
 * optimised code then serves both kinds of object; a worker has a V8 isolate of its own. The batch
 * span processor stays on the main thread: it hands finished spans here, as data, when a batch is due.
 */
export class WorkerSpanExporter implements SpanExporter {
  readonly #worker: Worker;
  readonly #waiting = new Map<number, (error?: Error) => void>();
  #next = 0;
  #failure: Error | undefined;

  constructor(target: ExportTarget) {
    this.#worker = new Worker(new URL("./export-worker.ts", import.meta.url), { workerData: target });
    // Idle, it keeps no process alive; while an export is under way it does (shutdown's last batch).
    this.#worker.unref();
    this.#worker.on("message", ({ id, error }: FromWorker) => this.#settle(id, error === undefined ? undefined : new Error(error)));
    this.#worker.on("error", (err: unknown) => (this.#failure = err instanceof Error ? err : new Error(String(err))));
    this.#worker.on("exit", () => {
      this.#failure ??= new Error("the OTLP export worker stopped");
      for (const id of [...this.#waiting.keys()]) this.#settle(id, this.#failure);
    });
  }

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    if (spans.length === 0) return done({ code: ExportResultCode.SUCCESS });
    const { attributes, schemaUrl } = spans[0]!.resource;
    this.#send({ kind: "export", id: 0, resource: { attributes, ...(schemaUrl && { schemaUrl }) }, spans: spans.map(wireSpan) }).then(
      () => done({ code: ExportResultCode.SUCCESS }),
      (error: Error) => done({ code: ExportResultCode.FAILED, error }),
    );
  }

  /** The batch span processor exports what it holds before it calls this; then the worker's exporter shuts down and the thread ends. */
  async shutdown(): Promise<void> {
    if (!this.#failure) await this.#send({ kind: "shutdown", id: 0 }).catch(() => undefined);
    await this.#worker.terminate();
  }

  /** Nothing is held here: a batch is in the worker's exporter as soon as it is sent. */
  async forceFlush(): Promise<void> {}

  #send(message: ToWorker): Promise<void> {
    if (this.#failure) return Promise.reject(this.#failure);
    const id = ++this.#next;
    return new Promise((resolve, reject) => {
      this.#waiting.set(id, (error) => (error ? reject(error) : resolve()));
      if (this.#waiting.size === 1) this.#worker.ref();
      this.#worker.postMessage({ ...message, id });
    });
  }

  #settle(id: number, error?: Error): void {
    const waiting = this.#waiting.get(id);
    if (!waiting) return;
    this.#waiting.delete(id);
    if (this.#waiting.size === 0) this.#worker.unref();
    waiting(error);
  }
}
