import { isoOrNull, type KeyEvent, type KeyRecordJson } from "../../lib/key-record.ts";
import type { KeyRegistry } from "../registry/store.ts";

/** The record's wire fields the events carry (lib/key-record.ts KeyEvent: key.created has them all, later events what changed). */
const RECORD_FIELDS = ["id", "name", "ownerId", "metadata", "plan", "limits", "scopes", "allowedCidrs", "createdAt", "expiresAt", "revokedAt", "generation"] as const;

/**
 * A key's record as of the last of `events` (that key's events in seq order): key.created's
 * fields with every later change applied. lastUsedAt is null: last use is not an event.
 */
export function recordAsOf(events: readonly KeyEvent[]): KeyRecordJson | undefined {
  let record: Record<string, unknown> | undefined;
  for (const e of events) {
    if (e.type === "key.created") record = {};
    if (!record) continue;
    for (const field of RECORD_FIELDS) if (field in e.changes) record[field] = e.changes[field];
  }
  return record && ({ ...Object.fromEntries(RECORD_FIELDS.map((f) => [f, record[f] ?? null])), lastUsedAt: null } as unknown as KeyRecordJson);
}

/** What a subscription receives for `event`: `{"type", "timestamp", "data"}` (DESIGN, Webhooks), as the exact text signed and sent. */
export async function webhookBody(registry: KeyRegistry, event: KeyEvent): Promise<string> {
  let data: unknown;
  if (event.type === "usage.threshold") {
    const { window, percent, used, limit } = event.changes;
    data = { keyId: event.keyId, window, percent, used, limit };
  } else {
    data = (event.keyId !== null && recordAsOf(await registry.keyEvents(event.keyId, event.seq))) || { id: event.keyId };
  }
  return JSON.stringify({ type: event.type, timestamp: isoOrNull(event.at), data });
}
