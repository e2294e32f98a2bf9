import { SpanKind, SpanStatusCode, type Span } from "@opentelemetry/api";
import { childSpan } from "../../lib/tracing/spans.ts";

/**
 * One span per store query, as OpenTelemetry's database conventions name it ("SELECT pets"):
 * the database system, the operation, the table and our query name (the `query` label of the
 * store's latency histogram). Never the SQL's values: no name, id or key of a request.
 */
export interface QueryShape {
  /** The metrics label (list_pets, insert_pet, …). */
  query: string;
  operation: "SELECT" | "INSERT" | "DELETE" | "COMMIT";
  /** The table, absent for COMMIT. */
  table?: string;
}

export type DbSystem = "sqlite" | "postgresql";

/** The query's span under the active (recording) span; undefined when the request records nothing. */
export function querySpan(system: DbSystem, { query, operation, table }: QueryShape): Span | undefined {
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
  );
}

/** Ends a query's span, marked failed when the query failed (the error's text stays in the logs). */
export function endQuerySpan(span: Span | undefined, failed: boolean): void {
  if (!span) return;
  if (failed) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}

/** Runs `run` as one query in its own span. */
export async function inQuerySpan<T>(system: DbSystem, shape: QueryShape, run: () => Promise<T>): Promise<T> {
  const span = querySpan(system, shape);
  try {
    const result = await run();
    endQuerySpan(span, false);
    return result;
  } catch (err) {
    endQuerySpan(span, true);
    throw err;
  }
}
