import { SpanKind, SpanStatusCode, type Span, type TimeInput } from "@opentelemetry/api";
import { childSpan } from "../../lib/tracing/spans.ts";

/**
 * One span per store query, as OpenTelemetry's database conventions name it ("SELECT pets"):
 * the database system, the operation, the table and our query name (the `query` label of the
 * store's latency histogram). Never the SQL's values: no name, id or key of a request.
 */
export interface QueryShape {
  operation: "SELECT" | "INSERT" | "DELETE" | "COMMIT";
  /** The table, absent for COMMIT and ping. */
  table?: string;
}

/** Every query either store runs, by its name (the metrics label, pet_store.query on its span), and its shape. */
export const QUERY_SHAPES = {
  insert_pet: { operation: "INSERT", table: "pets" },
  insert_pet_once: { operation: "INSERT", table: "pets" },
  get_pet: { operation: "SELECT", table: "pets" },
  list_pets: { operation: "SELECT", table: "pets" },
  list_pets_by_status: { operation: "SELECT", table: "pets" },
  find_idempotency_key: { operation: "SELECT", table: "idempotency_keys" },
  expire_idempotency_keys: { operation: "DELETE", table: "idempotency_keys" },
  remember_idempotency_key: { operation: "INSERT", table: "idempotency_keys" },
  ping: { operation: "SELECT" },
  commit: { operation: "COMMIT" },
} as const satisfies Record<string, QueryShape>;
export type StoreQuery = keyof typeof QUERY_SHAPES;

/** The statements both stores have, by the name of their query: each store's own statements add to these. */
export const PET_QUERIES = { insert: "insert_pet", get: "get_pet", list: "list_pets", listByStatus: "list_pets_by_status" } as const satisfies Record<string, StoreQuery>;

export type DbSystem = "sqlite" | "postgresql";

/**
 * The query's span under the active (recording) span; undefined when the request records nothing.
 * `startTime`: when the query began, if before now (it ran on another thread).
 */
export function querySpan(system: DbSystem, query: StoreQuery, startTime?: TimeInput): Span | undefined {
  const { operation, table } = QUERY_SHAPES[query] as QueryShape;
  return childSpan(
    table ? `${operation} ${table}` : operation,
    {
      // db.system is the name most backends still read; db.system.name the current convention's.
      "db.system": system,
      "db.system.name": system,
      "db.operation.name": operation,
      ...(table && { "db.collection.name": table }),
      "pet_store.query": query,
    },
    SpanKind.CLIENT,
    startTime,
  );
}

/** Ends a query's span, marked failed when the query failed (the error's text stays in the logs); at `endTime` if given. */
export function endQuerySpan(span: Span | undefined, failed: boolean, endTime?: TimeInput): void {
  if (!span) return;
  if (failed) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end(endTime);
}
