import type { DatabaseSync } from "node:sqlite";
import type { KeyEvent } from "../../../lib/key-record.ts";
import type { NewEvent } from "../store.ts";
import type { DeliveryAttempt, NewWebhook, WebhookProgress } from "../webhooks.ts";

/** The webhook writes (../webhooks.ts), run by writes.ts in the writer's transaction. */
export type WebhookWriteRequest =
  | { op: "createWebhook"; webhook: NewWebhook; event: NewEvent }
  | { op: "deleteWebhook"; id: string; at: number; event: NewEvent }
  | { op: "leaseWebhook"; id: string; owner: string; now: number; until: number }
  | { op: "releaseWebhook"; id: string; owner: string }
  | { op: "recordDelivery"; id: string; owner: string; attempt: DeliveryAttempt | null; progress: WebhookProgress };

export function runWebhookWrite(db: DatabaseSync, w: WebhookWriteRequest, appendEvent: (e: NewEvent) => KeyEvent): KeyEvent | boolean | undefined {
  switch (w.op) {
    case "createWebhook": {
      const created = appendEvent(w.event);
      const { id, url, events, secret, createdAt } = w.webhook;
      db.prepare("INSERT INTO webhooks (id, url, events, secret, created_at, cursor) VALUES (?, ?, ?, ?, ?, ?)").run(id, url, JSON.stringify(events), secret, createdAt, created.seq);
      return created;
    }
    case "deleteWebhook": {
      const { changes } = db.prepare("UPDATE webhooks SET deleted_at = ?, lease_owner = NULL, lease_until = NULL WHERE id = ? AND deleted_at IS NULL").run(w.at, w.id);
      return Number(changes) === 1 ? appendEvent(w.event) : undefined;
    }
    case "leaseWebhook": {
      const { changes } = db
        .prepare("UPDATE webhooks SET lease_owner = ?, lease_until = ? WHERE id = ? AND deleted_at IS NULL AND (lease_owner IS NULL OR lease_owner = ? OR lease_until <= ?)")
        .run(w.owner, w.until, w.id, w.owner, w.now);
      return Number(changes) === 1;
    }
    case "releaseWebhook":
      db.prepare("UPDATE webhooks SET lease_owner = NULL, lease_until = NULL WHERE id = ? AND lease_owner = ?").run(w.id, w.owner);
      return undefined;
    case "recordDelivery": {
      const p = w.progress;
      const { changes } = db
        .prepare("UPDATE webhooks SET cursor = ?, failures = ?, first_attempt_at = ?, next_attempt_at = ? WHERE id = ? AND lease_owner = ?")
        .run(p.cursor, p.failures, p.firstAttemptAt, p.nextAttemptAt, w.id, w.owner);
      if (Number(changes) !== 1) return false;
      const a = w.attempt;
      if (a) {
        db.prepare("INSERT INTO webhook_deliveries (webhook_id, event_seq, type, attempt, status, at, error) VALUES (?, ?, ?, ?, ?, ?, ?)").run(
          w.id,
          a.eventSeq,
          a.type,
          a.attempt,
          a.status,
          a.at,
          a.error,
        );
      }
      return true;
    }
  }
}
