import { describe, expect, it } from "vitest";
import type { KeyEvent } from "../../../../lib/key-record.ts";
import { recordAsOf } from "../../../../keys/webhooks/payload.ts";

const at = Date.UTC(2030, 0, 1);
const e = (seq: number, type: KeyEvent["type"], changes: Record<string, unknown>): KeyEvent => ({ seq, at, actor: "cli", type, keyId: "key_1", changes });

describe("a key's record as of an event", () => {
  it("is key.created's fields with each later change applied; the signing pair and grace times are not in it", () => {
    const created = {
      id: "key_1",
      name: "a",
      ownerId: null,
      metadata: {},
      plan: "free",
      limits: { perMinute: 10, perDay: 100 },
      scopes: ["pets:read"],
      allowedCidrs: [],
      createdAt: "2030-01-01T00:00:00.000Z",
      expiresAt: null,
      revokedAt: null,
      generation: 0,
    };
    const events = [
      e(1, "key.created", { ...created, kid: "k1" }),
      e(4, "key.updated", { name: "b", plan: "pro", limits: { perMinute: 100, perDay: 10_000 } }),
      e(6, "key.rolled", { generation: 1, graceUntil: { "0": "2030-01-02T00:00:00.000Z" }, kid: "k2" }),
      e(9, "key.banned", { until: "2030-01-01T00:05:00.000Z" }),
    ];
    expect(recordAsOf(events.slice(0, 1))).toEqual({ ...created, lastUsedAt: null });
    expect(recordAsOf(events)).toEqual({ ...created, name: "b", plan: "pro", limits: { perMinute: 100, perDay: 10_000 }, generation: 1, lastUsedAt: null });
    expect(recordAsOf([])).toBeUndefined();
  });
});
