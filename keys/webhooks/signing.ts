import { createHmac, randomBytes } from "node:crypto";

/**
 * Standard Webhooks signing (https://www.standardwebhooks.com): the secret is `whsec_` + base64 of
 * the signing key, and `webhook-signature` is `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`
 * under those key bytes; any Standard Webhooks library verifies it.
 */
const PREFIX = "whsec_";

/** A new subscription's secret: 24 random bytes (DESIGN, Webhooks). */
export const newWebhookSecret = (): string => PREFIX + randomBytes(24).toString("base64");

export interface SignedHeaders {
  "webhook-id": string;
  "webhook-timestamp": string;
  "webhook-signature": string;
}

/** The three headers of one delivery attempt of `body` (the exact bytes sent). */
export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): SignedHeaders {
  const key = Buffer.from(secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret, "base64");
  const signature = createHmac("sha256", key).update(`${id}.${timestampSeconds}.${body}`).digest("base64");
  return { "webhook-id": id, "webhook-timestamp": String(timestampSeconds), "webhook-signature": `v1,${signature}` };
}
