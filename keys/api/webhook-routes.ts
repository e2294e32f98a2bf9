import { randomUUID } from "node:crypto";
import { z } from "zod";
import type { Clock } from "../../lib/clock.ts";
import { ApiError } from "../../lib/http/errors.ts";
import { KEY_EVENT_TYPES } from "../../lib/key-record.ts";
import type { KeyRegistry } from "../registry/store.ts";
import type { DeliveryAttempt, WebhookSubscription } from "../registry/webhooks.ts";
import { newWebhookSecret } from "../webhooks/signing.ts";
import { callerOf } from "./auth.ts";
import { parseInput } from "./input.ts";
import { cursorParam, queryInt } from "./paging.ts";
import type { Route } from "./route.ts";

const httpUrl = z
  .string({ error: "is required: an http(s) URL" })
  .max(2000, "must be at most 2000 characters")
  .refine((v) => {
    try {
      return ["http:", "https:"].includes(new URL(v).protocol);
    } catch {
      return false;
    }
  }, "must be an absolute http:// or https:// URL");
const newWebhook = z.strictObject({
  url: httpUrl,
  events: z
    .array(z.enum(KEY_EVENT_TYPES, { error: `must be one of ${KEY_EVENT_TYPES.join(", ")}` }), { error: "is required: a list of event types" })
    .min(1, "must name at least one event type")
    .refine((e) => new Set(e).size === e.length, "must not repeat an event type"),
});
const idParam = z.object({ id: z.string().regex(/^wh_[A-Za-z0-9]{1,64}$/, "is not a webhook id") });
const deliveriesQuery = z.strictObject({ limit: queryInt(1, 100, 20), cursor: cursorParam });

/** A subscription as lists and reads show it: never its secret. */
const webhookJson = (w: Pick<WebhookSubscription, "id" | "url" | "events" | "createdAt">) => ({ id: w.id, url: w.url, events: w.events, createdAt: new Date(w.createdAt).toISOString() });

const deliveryJson = (d: DeliveryAttempt) => ({ eventSeq: d.eventSeq, type: d.type, attempt: d.attempt, status: d.status, at: new Date(d.at).toISOString(), error: d.error });

/** POST|GET /v1/webhooks, GET|DELETE /v1/webhooks/{id}, GET /v1/webhooks/{id}/deliveries (DESIGN, Webhooks). The secret is shown once, in the 201. */
export function webhookRoutes(deps: { registry: KeyRegistry; clock: Clock }): Route[] {
  const { registry, clock } = deps;
  const live = async (id: string): Promise<WebhookSubscription> => {
    const found = await registry.getWebhook(id);
    if (!found || found.deletedAt !== null) throw new ApiError("not_found", "No such webhook subscription.");
    return found;
  };
  return [
    {
      method: "post",
      path: "/v1/webhooks",
      scopes: ["webhooks:write"],
      body: ["application/json"],
      handle: async (req, res) => {
        const { url, events } = parseInput(newWebhook, req.body, "body");
        const now = clock();
        const webhook = { id: `wh_${randomUUID().replaceAll("-", "").slice(0, 16)}`, url, events, secret: newWebhookSecret(), createdAt: now };
        await registry.createWebhook(webhook, { at: now, actor: callerOf(res).name, type: "webhook.created", keyId: null, changes: { id: webhook.id, url, events } });
        res.status(201).json({ ...webhookJson(webhook), secret: webhook.secret });
      },
    },
    {
      method: "get",
      path: "/v1/webhooks",
      scopes: ["webhooks:read"],
      handle: async (_req, res) => {
        res.json({ items: (await registry.listWebhooks()).map(webhookJson), nextCursor: null });
      },
    },
    {
      method: "get",
      path: "/v1/webhooks/:id",
      scopes: ["webhooks:read"],
      handle: async (req, res) => {
        const { id } = parseInput(idParam, req.params, "path");
        res.json(webhookJson(await live(id)));
      },
    },
    {
      method: "delete",
      path: "/v1/webhooks/:id",
      scopes: ["webhooks:write"],
      handle: async (req, res) => {
        const { id } = parseInput(idParam, req.params, "path");
        const now = clock();
        const deleted = await registry.deleteWebhook(id, now, { at: now, actor: callerOf(res).name, type: "webhook.deleted", keyId: null, changes: { id } });
        if (!deleted) throw new ApiError("not_found", "No such webhook subscription.");
        res.status(204).end();
      },
    },
    {
      method: "get",
      path: "/v1/webhooks/:id/deliveries",
      scopes: ["webhooks:read"],
      handle: async (req, res) => {
        const { id } = parseInput(idParam, req.params, "path");
        const { limit, cursor } = parseInput(deliveriesQuery, req.query, "query");
        await live(id);
        const page = await registry.listDeliveries(id, limit, cursor);
        res.json({ items: page.items.map(deliveryJson), nextCursor: page.nextCursor });
      },
    },
  ];
}
