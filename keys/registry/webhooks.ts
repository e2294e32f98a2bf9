/**
 * The registry's part for webhooks (DESIGN, Webhooks): subscriptions with their secret, each
 * one's delivery progress through the events table (its outbox), every delivery attempt, and a
 * lease naming the one key-service replica that delivers a subscription now. keys/webhooks/
 * decides what to send and when; the store only keeps it, each change in one transaction.
 */
import type { KEY_EVENT_TYPES, KeyEvent, Page } from "../../lib/key-record.ts";
import type { NewEvent } from "./store.ts";

export type WebhookEventType = (typeof KEY_EVENT_TYPES)[number];

/** Where a subscription's delivery stands. */
export interface WebhookProgress {
  /** Every event up to this seq is done with: delivered, given up, or not of the subscription's types. */
  cursor: number;
  /** Failed attempts at the event after the cursor so far (0: none failed yet). */
  failures: number;
  /** When the first attempt at that event was made (ms); null before any. */
  firstAttemptAt: number | null;
  /** When the next attempt is due (ms); null: at once. */
  nextAttemptAt: number | null;
}

export interface WebhookSubscription {
  id: string;
  url: string;
  events: WebhookEventType[];
  /** `whsec_` + base64 of the signing key: shown once, at creation; never in a list, event or log. */
  secret: string;
  createdAt: number;
  deletedAt: number | null;
  progress: WebhookProgress;
}

export type NewWebhook = Omit<WebhookSubscription, "deletedAt" | "progress">;

/** One attempt at delivering one event to one subscription. */
export interface DeliveryAttempt {
  eventSeq: number;
  type: WebhookEventType;
  /** 1 for the first attempt at this event. */
  attempt: number;
  /** The receiver's HTTP status; null when it gave none (refused, timed out). */
  status: number | null;
  at: number;
  /** Why it failed (never a secret); null when delivered. */
  error: string | null;
}

export interface WebhookRegistry {
  /** Creates the subscription with its event; it is delivered the events after that one. */
  createWebhook(webhook: NewWebhook, event: NewEvent): Promise<KeyEvent>;
  /** Sets deletedAt with the event; undefined (and no event) when there is no such live subscription. */
  deleteWebhook(id: string, at: number, event: NewEvent): Promise<KeyEvent | undefined>;
  /** Deleted ones too (deletedAt set). */
  getWebhook(id: string): Promise<WebhookSubscription | undefined>;
  /** Live subscriptions, oldest first. */
  listWebhooks(): Promise<WebhookSubscription[]>;
  /**
   * Takes or renews the subscription's delivery lease for `owner` until `until`: granted when it is
   * free, expired at `now`, or `owner`'s already, and the subscription is live.
   */
  leaseWebhook(id: string, owner: string, now: number, until: number): Promise<boolean>;
  /** Gives the lease up (when `owner` holds it). */
  releaseWebhook(id: string, owner: string): Promise<void>;
  /**
   * Records an attempt (if any) and the new progress in one transaction, only while `owner` holds
   * the lease: false (nothing written) when another replica took it meanwhile.
   */
  recordDelivery(id: string, owner: string, attempt: DeliveryAttempt | null, progress: WebhookProgress): Promise<boolean>;
  /** Attempts oldest first, `cursor` from the previous page (InvalidCursorError otherwise). */
  listDeliveries(id: string, limit: number, cursor?: string): Promise<Page<DeliveryAttempt>>;
  /** The key's events up to and including `throughSeq`, in seq order (a record as of an event is their fold). */
  keyEvents(keyId: string, throughSeq: number): Promise<KeyEvent[]>;
}
