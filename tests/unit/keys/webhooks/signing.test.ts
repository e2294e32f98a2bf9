import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { newWebhookSecret, signWebhook } from "../../../../keys/webhooks/signing.ts";

describe("Standard Webhooks signing", () => {
  it("signs so the independent standardwebhooks package verifies, and a changed body, id or secret does not", () => {
    const secret = newWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    const body = JSON.stringify({ type: "key.created", timestamp: "2030-01-01T00:00:00.000Z", data: { id: "key_1" } });
    const now = Math.floor(Date.now() / 1000);
    const headers = signWebhook(secret, "evt_7", now, body);
    expect(headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(new Webhook(secret).verify(body, { ...headers })).toEqual(JSON.parse(body));
    // What the library signs is what we sign.
    expect(new Webhook(secret).sign("evt_7", new Date(now * 1000), body)).toBe(headers["webhook-signature"]);
    expect(() => new Webhook(secret).verify(body.replace("key_1", "key_2"), { ...headers })).toThrow();
    expect(() => new Webhook(secret).verify(body, { ...headers, "webhook-id": "evt_8" })).toThrow();
    expect(() => new Webhook(newWebhookSecret()).verify(body, { ...headers })).toThrow();
  });
});
