import { createRequire } from "node:module";
import http from "node:http";
import net from "node:net";
import { gunzipSync } from "node:zlib";
import { listen } from "../lib/listen.ts";

/**
 * An OTLP/HTTP trace receiver on loopback, as a collector would be: it accepts POST /v1/traces in
 * both encodings the exporters send (`application/x-protobuf`, decoded with the OTLP protobuf
 * definitions as @opentelemetry/otlp-transformer 0.57 generated them for protobufjs, and
 * `application/json`, OTLP's JSON mapping with hex ids), gzip or not, and keeps every span.
 */
export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  /** Absent on a trace's root span. */
  parentSpanId?: string;
  name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, string | number | boolean>;
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  status: number;
  /** How it arrived. */
  encoding: "protobuf" | "json";
}

export interface OtlpReceiver {
  /** http://127.0.0.1:PORT, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  url: string;
  spans(): ReceivedSpan[];
  /** Every export request's body as received (decompressed), to look for what must never be in a span. */
  rawBodies(): Buffer[];
  /** The Content-Type of every export request. */
  contentTypes(): string[];
  close(): Promise<void>;
}

type AnyValue = { stringValue?: string | null; boolValue?: boolean | null; intValue?: unknown; doubleValue?: number | null };
interface KeyValue {
  key: string;
  value?: AnyValue | null;
}
interface OtlpSpan {
  traceId: Uint8Array | string;
  spanId: Uint8Array | string;
  parentSpanId?: Uint8Array | string | null;
  name: string;
  kind: number;
  attributes?: KeyValue[] | null;
  status?: { code?: number | null } | null;
}
interface ExportRequest {
  resourceSpans?: { resource?: { attributes?: KeyValue[] | null } | null; scopeSpans?: { spans?: OtlpSpan[] | null }[] | null }[] | null;
}

const require = createRequire(import.meta.url);
const { opentelemetry } = require("otlp-proto-decoder/build/src/generated/root.js") as {
  opentelemetry: { proto: { collector: { trace: { v1: { ExportTraceServiceRequest: { decode(bytes: Uint8Array): ExportRequest } } } } } };
};
const ExportTraceServiceRequest = opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;

/** Protobuf ids are bytes, OTLP/JSON ids hex strings; both become hex. */
const hex = (id: Uint8Array | string | null | undefined): string | undefined =>
  id === null || id === undefined || id.length === 0 ? undefined : typeof id === "string" ? id : Buffer.from(id).toString("hex");

function valueOf(value: AnyValue | null | undefined): string | number | boolean {
  if (!value) return "";
  if (value.stringValue !== undefined && value.stringValue !== null) return value.stringValue;
  if (value.boolValue !== undefined && value.boolValue !== null) return value.boolValue;
  if (value.doubleValue !== undefined && value.doubleValue !== null) return value.doubleValue;
  // protobufjs gives int64 as a Long (or a number), OTLP/JSON as a decimal string.
  if (value.intValue !== undefined && value.intValue !== null) return Number(String(value.intValue));
  return "";
}

const attributesOf = (list: KeyValue[] | null | undefined) => Object.fromEntries((list ?? []).map((kv) => [kv.key, valueOf(kv.value)]));

function spansOf(request: ExportRequest, encoding: ReceivedSpan["encoding"]): ReceivedSpan[] {
  return (request.resourceSpans ?? []).flatMap((rs) => {
    const service = String(attributesOf(rs.resource?.attributes)["service.name"] ?? "");
    return (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((span) => {
        const parentSpanId = hex(span.parentSpanId);
        return {
          service,
          traceId: hex(span.traceId)!,
          spanId: hex(span.spanId)!,
          ...(parentSpanId && { parentSpanId }),
          name: span.name,
          kind: span.kind,
          attributes: attributesOf(span.attributes),
          status: span.status?.code ?? 0,
          encoding,
        };
      }),
    );
  });
}

/** `decode: false` (the benchmark's sink) accepts and counts exports without decoding or keeping them. */
export async function startOtlpReceiver(opts: { port?: number; decode?: boolean } = {}): Promise<OtlpReceiver> {
  const decode = opts.decode ?? true;
  const spans: ReceivedSpan[] = [];
  const bodies: Buffer[] = [];
  const types: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/v1/traces") {
        res.writeHead(404).end();
        return;
      }
      const raw = Buffer.concat(chunks);
      if (!decode) {
        types.push(req.headers["content-type"] ?? "");
        res.writeHead(200, { "Content-Type": "application/x-protobuf" }).end();
        return;
      }
      const body = req.headers["content-encoding"] === "gzip" ? gunzipSync(raw) : raw;
      const type = req.headers["content-type"] ?? "";
      types.push(type);
      bodies.push(body);
      if (type.startsWith("application/x-protobuf")) {
        spans.push(...spansOf(ExportTraceServiceRequest.decode(body), "protobuf"));
        // An empty ExportTraceServiceResponse: full success.
        res.writeHead(200, { "Content-Type": "application/x-protobuf" }).end();
      } else if (type.startsWith("application/json")) {
        spans.push(...spansOf(JSON.parse(body.toString("utf8")) as ExportRequest, "json"));
        res.writeHead(200, { "Content-Type": "application/json" }).end("{}");
      } else {
        res.writeHead(415).end();
      }
    });
  });
  const port = await listen(server, opts.port ?? 0, "127.0.0.1");
  return {
    url: `http://127.0.0.1:${port}`,
    spans: () => [...spans],
    rawBodies: () => [...bodies],
    contentTypes: () => [...types],
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A collector that accepts connections and never answers: an exporter waits for it until its own timeout. */
export async function startSilentCollector(): Promise<{ url: string; close(): void }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => sockets.add(socket));
  const port = await listen(server, 0, "127.0.0.1");
  return {
    url: `http://127.0.0.1:${port}`,
    close() {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}
