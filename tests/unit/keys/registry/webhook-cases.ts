import { expect, it } from "vitest";
import { InvalidCursorError, type KeyRegistry, type NewEvent } from "../../../../keys/registry/store.ts";
import type { DeliveryAttempt, NewWebhook } from "../../../../keys/registry/webhooks.ts";

const T0 = Date.UTC(2030, 0, 2);
let ids = 0;

const webhook = (): NewWebhook => ({
  id: `wh_${String(++ids).padStart(16, "0")}`,
  url: "http://127.0.0.1:9/hook",
  events: ["key.created", "key.revoked"],
  secret: "whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0",
  createdAt: T0,
});

const event = (type: NewEvent["type"], changes: Record<string, unknown> = {}, keyId: string | null = null): NewEvent => ({ at: T0, actor: "cli", type, keyId, changes });

const attempt = (eventSeq: number, n: number, status: number | null): DeliveryAttempt => ({
  eventSeq,
  type: "key.created",
  attempt: n,
  status,
  at: T0 + n,
  error: status === 200 ? null : "HTTP 500",
});

/** The webhook part of the registry conformance suite (conformance.ts runs these inside its describe). */
export function webhookCases(reg: () => KeyRegistry, another: () => Promise<KeyRegistry>): void {
  it("webhooks: created with their event (no secret in it) and delivered from the events after it; listed live, deleted once with one event", async () => {
    const w = webhook();
    const created = await reg().createWebhook(w, event("webhook.created", { id: w.id, url: w.url, events: w.events }));
    expect(created.type).toBe("webhook.created");
    expect(JSON.stringify(await reg().events(created.seq - 1, 1))).not.toContain("whsec_");
    const stored = await reg().getWebhook(w.id);
    expect(stored).toEqual({ ...w, deletedAt: null, progress: { cursor: created.seq, failures: 0, firstAttemptAt: null, nextAttemptAt: null } });
    expect((await reg().listWebhooks()).map((x) => x.id)).toContain(w.id);
    const deleted = await reg().deleteWebhook(w.id, T0 + 5, event("webhook.deleted", { id: w.id }));
    expect(deleted?.seq).toBe(created.seq + 1);
    expect(await reg().deleteWebhook(w.id, T0 + 6, event("webhook.deleted", { id: w.id }))).toBeUndefined();
    expect(await reg().lastSeq()).toBe(created.seq + 1);
    expect((await reg().getWebhook(w.id))!.deletedAt).toBe(T0 + 5);
    expect((await reg().listWebhooks()).map((x) => x.id)).not.toContain(w.id);
    expect(await reg().getWebhook("wh_none")).toBeUndefined();
  });

  it("webhooks: one owner holds a lease at a time (another replica included) until it expires or is released; a deleted subscription is leased by none", async () => {
    const w = webhook();
    await reg().createWebhook(w, event("webhook.created", { id: w.id }));
    const other = await another();
    expect(await reg().leaseWebhook(w.id, "a", T0, T0 + 1000)).toBe(true);
    expect(await other.leaseWebhook(w.id, "b", T0 + 10, T0 + 1010)).toBe(false);
    expect(await reg().leaseWebhook(w.id, "a", T0 + 500, T0 + 1500)).toBe(true);
    expect(await other.leaseWebhook(w.id, "b", T0 + 1400, T0 + 2400)).toBe(false);
    expect(await other.leaseWebhook(w.id, "b", T0 + 1500, T0 + 2500)).toBe(true);
    await reg().releaseWebhook(w.id, "a");
    expect(await reg().leaseWebhook(w.id, "a", T0 + 1600, T0 + 2600)).toBe(false);
    await other.releaseWebhook(w.id, "b");
    expect(await reg().leaseWebhook(w.id, "a", T0 + 1600, T0 + 2600)).toBe(true);
    await reg().deleteWebhook(w.id, T0 + 1700, event("webhook.deleted", { id: w.id }));
    expect(await other.leaseWebhook(w.id, "b", T0 + 9999, T0 + 19_999)).toBe(false);
  });

  it("webhooks: attempts and progress are recorded together, only by the lease's owner; deliveries page oldest first", async () => {
    const w = webhook();
    const { seq } = await reg().createWebhook(w, event("webhook.created", { id: w.id }));
    expect(await reg().leaseWebhook(w.id, "a", T0, T0 + 60_000)).toBe(true);
    const failing = { cursor: seq, failures: 1, firstAttemptAt: T0 + 1, nextAttemptAt: T0 + 5001 };
    expect(await reg().recordDelivery(w.id, "a", attempt(seq + 1, 1, 500), failing)).toBe(true);
    expect(await reg().recordDelivery(w.id, "b", attempt(seq + 1, 2, 200), { ...failing, cursor: seq + 1 })).toBe(false);
    expect((await reg().getWebhook(w.id))!.progress).toEqual(failing);
    const done = { cursor: seq + 1, failures: 0, firstAttemptAt: null, nextAttemptAt: null };
    expect(await reg().recordDelivery(w.id, "a", { ...attempt(seq + 1, 2, null), error: "timed out" }, failing)).toBe(true);
    expect(await reg().recordDelivery(w.id, "a", attempt(seq + 1, 3, 200), done)).toBe(true);
    expect(await reg().recordDelivery(w.id, "a", null, { ...done, cursor: seq + 7 })).toBe(true);
    expect((await reg().getWebhook(w.id))!.progress.cursor).toBe(seq + 7);
    const first = await reg().listDeliveries(w.id, 2);
    expect(first.items).toEqual([attempt(seq + 1, 1, 500), { ...attempt(seq + 1, 2, null), error: "timed out" }]);
    const second = await reg().listDeliveries(w.id, 2, first.nextCursor!);
    expect(second).toEqual({ items: [attempt(seq + 1, 3, 200)], nextCursor: null });
    expect(await reg().listDeliveries("wh_none", 10)).toEqual({ items: [], nextCursor: null });
    await expect(reg().listDeliveries(w.id, 2, "nope")).rejects.toBeInstanceOf(InvalidCursorError);
  });

  it("a key's events up to a seq, in order, without other keys' events", async () => {
    const a = await reg().appendEvent(event("key.banned", { until: "x" }, "key_fold_a"));
    await reg().appendEvent(event("key.banned", { until: "y" }, "key_fold_b"));
    const a2 = await reg().appendEvent(event("usage.threshold", { percent: 80 }, "key_fold_a"));
    await reg().appendEvent(event("key.banned", { until: "z" }, "key_fold_a"));
    expect((await reg().keyEvents("key_fold_a", a2.seq)).map((e) => e.seq)).toEqual([a.seq, a2.seq]);
  });
}
