/** How webhook subscriptions and delivery attempts sit in table columns, for both stores (as rows.ts for keys). */
import type { Page } from "../../lib/key-record.ts";
import { InvalidCursorError } from "./store.ts";
import type { DeliveryAttempt, WebhookEventType, WebhookSubscription } from "./webhooks.ts";

const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

export const WEBHOOK_COLUMNS = "id, url, events, secret, created_at, deleted_at, cursor, failures, first_attempt_at, next_attempt_at";

export function webhookOfRow(row: Record<string, unknown>): WebhookSubscription {
  return {
    id: row.id as string,
    url: row.url as string,
    events: (typeof row.events === "string" ? JSON.parse(row.events) : row.events) as WebhookEventType[],
    secret: row.secret as string,
    createdAt: Number(row.created_at),
    deletedAt: numOrNull(row.deleted_at),
    progress: {
      cursor: Number(row.cursor),
      failures: Number(row.failures),
      firstAttemptAt: numOrNull(row.first_attempt_at),
      nextAttemptAt: numOrNull(row.next_attempt_at),
    },
  };
}

export const DELIVERY_COLUMNS = "id, event_seq, type, attempt, status, at, error";

export function deliveryOfRow(row: Record<string, unknown>): DeliveryAttempt {
  return {
    eventSeq: Number(row.event_seq),
    type: row.type as WebhookEventType,
    attempt: Number(row.attempt),
    status: numOrNull(row.status),
    at: Number(row.at),
    error: (row.error as string | null) ?? null,
  };
}

/** The deliveries list's cursor: the row id the previous page ended at, as decimal text. */
export function deliveryCursorAfter(cursor: string | undefined): number {
  if (cursor === undefined) return 0;
  if (!/^[0-9]{1,15}$/.test(cursor)) throw new InvalidCursorError();
  return Number(cursor);
}

/** A page of `rows` (limit + 1 fetched, with their `id`) and its next cursor. */
export function deliveryPage(rows: Record<string, unknown>[], limit: number): Page<DeliveryAttempt> {
  const page = rows.slice(0, limit);
  return { items: page.map(deliveryOfRow), nextCursor: rows.length > limit ? String(page.at(-1)!.id) : null };
}
