import { createHash } from "node:crypto";
import { z } from "zod";
import { PLAN_NAMES } from "../../lib/api-key-format.ts";
import { keyRecordJson, type KeyRecord, type KeyState } from "../../lib/key-record.ts";
import type { FeedFollower } from "../feed/follower.ts";
import type { KeyOperations } from "../operations/index.ts";
import type { KeyUsage } from "../usage.ts";
import { callerOf } from "./auth.ts";
import { keyIdParam, parseInput } from "./input.ts";
import { cursorParam, queryInt } from "./paging.ts";
import type { Route } from "./route.ts";

/**
 * The body's shape: known fields of the right JSON types. What the values may be (plans and their
 * limits, CIDRs, expiry in the future, metadata size) is keys/operations' to say, for the command
 * line too; it answers KeyValidationError naming each field (→ 400).
 */
const limit = z.number({ error: "must be an integer" }).int("must be an integer").min(1, "must be at least 1").max(1e9, "must be at most 1000000000");
const strings = z.array(z.string({ error: "must be a string" }), { error: "must be a list of strings" });
const metadata = z.record(z.string(), z.unknown(), { error: "must be a JSON object" });
const newKey = z.strictObject({
  name: z.string({ error: "is required: text of at most 200 characters" }),
  plan: z.enum(PLAN_NAMES, { error: `is required: one of ${PLAN_NAMES.join(", ")}` }),
  perMinute: limit.optional(),
  perDay: limit.optional(),
  expiresAt: z.iso.datetime({ offset: true, error: "must be an ISO 8601 time (2030-01-01T00:00:00Z)" }).optional(),
  scopes: strings.optional(),
  allowedCidrs: strings.optional(),
  ownerId: z.string({ error: "must be a string" }).optional(),
  metadata: metadata.optional(),
});
const keyPatch = z.strictObject({
  name: z.string({ error: "must be a string" }).optional(),
  plan: z.enum(PLAN_NAMES, { error: `must be one of ${PLAN_NAMES.join(", ")}` }).optional(),
  perMinute: limit.optional(),
  perDay: limit.optional(),
  expiresAt: z.iso.datetime({ offset: true, error: "must be an ISO 8601 time or null" }).nullable().optional(),
  scopes: strings.nullable().optional(),
  allowedCidrs: strings.nullable().optional(),
  ownerId: z.string({ error: "must be a string or null" }).nullable().optional(),
  metadata: metadata.nullable().optional(),
});
const rollBody = z.strictObject({
  graceSeconds: z.number({ error: "must be an integer" }).int("must be an integer").min(0, "must be 0 to 2592000 (30 days)").max(30 * 86_400, "must be 0 to 2592000 (30 days)").optional(),
});
const listQuery = z.strictObject({
  limit: queryInt(1, 100, 20),
  cursor: cursorParam,
  ownerId: z.string().min(1, "must not be empty").max(200, "must be at most 200 characters").optional(),
  plan: z.enum(PLAN_NAMES, { error: `must be one of ${PLAN_NAMES.join(", ")}` }).optional(),
  state: z.enum(["active", "revoked", "expired"] satisfies KeyState[], { error: "must be active, revoked or expired" }).optional(),
});
/** draft-ietf-httpapi-idempotency-key-header: 1–255 printable ASCII characters. */
const idempotencyHeader = z.object({ "Idempotency-Key": z.string().regex(/^[\x20-\x7e]{1,255}$/, "must be 1 to 255 printable ASCII characters").optional() });

const MERGE_PATCH = ["application/merge-patch+json", "application/json"];

export interface KeyRouteDeps {
  operations: KeyOperations;
  follower: FeedFollower;
  /** GET /v1/keys/{id}/usage: as `keys usage --json`. */
  usage: (record: KeyRecord) => Promise<KeyUsage>;
}

/** /v1/keys: create (with Idempotency-Key), list, get, merge-patch, roll, revoke, usage. */
export function keyRoutes(deps: KeyRouteDeps): Route[] {
  const { operations, follower } = deps;
  return [
    {
      method: "post",
      path: "/v1/keys",
      scopes: ["keys:write"],
      body: ["application/json"],
      handle: async (req, res) => {
        const input = parseInput(newKey, req.body, "body");
        const key = parseInput(idempotencyHeader, { "Idempotency-Key": req.headers["idempotency-key"] }, "header")["Idempotency-Key"];
        const caller = callerOf(res);
        // Same token, same key, same body (as parsed: spacing and key order aside) → the first answer again.
        const requestHash = createHash("sha256").update(JSON.stringify(input)).digest("hex");
        const created = await operations.create(input, caller.name, key === undefined ? undefined : { tokenId: caller.id, key, requestHash });
        if (!created.replayed) follower.poke();
        if (created.replayed) res.setHeader("Idempotent-Replayed", "true");
        res.status(201).type("application/json").send(created.body);
      },
    },
    {
      method: "get",
      path: "/v1/keys",
      scopes: ["keys:read"],
      handle: async (req, res) => {
        const { limit, cursor, ...filter } = parseInput(listQuery, req.query, "query");
        const page = await operations.list(filter, limit, cursor);
        res.json({ items: page.items.map(keyRecordJson), nextCursor: page.nextCursor });
      },
    },
    {
      method: "get",
      path: "/v1/keys/:id",
      scopes: ["keys:read"],
      handle: async (req, res) => {
        const { id } = parseInput(keyIdParam, req.params, "path");
        res.json(keyRecordJson(await operations.get(id)));
      },
    },
    {
      method: "patch",
      path: "/v1/keys/:id",
      scopes: ["keys:write"],
      body: MERGE_PATCH,
      handle: async (req, res) => {
        const { id } = parseInput(keyIdParam, req.params, "path");
        const patch = parseInput(keyPatch, req.body, "body");
        const record = await operations.update(id, patch, callerOf(res).name);
        follower.poke();
        res.json(keyRecordJson(record));
      },
    },
    {
      method: "post",
      path: "/v1/keys/:id/roll",
      scopes: ["keys:write"],
      body: ["application/json"],
      handle: async (req, res) => {
        const { id } = parseInput(keyIdParam, req.params, "path");
        const { graceSeconds } = parseInput(rollBody, req.body, "body");
        const rolled = await operations.roll(id, graceSeconds, callerOf(res).name);
        follower.poke();
        res.status(201).json({ ...keyRecordJson(rolled.record), key: rolled.token });
      },
    },
    {
      method: "post",
      path: "/v1/keys/:id/revoke",
      scopes: ["keys:write"],
      handle: async (req, res) => {
        const { id } = parseInput(keyIdParam, req.params, "path");
        const record = await operations.revoke(id, callerOf(res).name);
        follower.poke();
        res.json(keyRecordJson(record));
      },
    },
    {
      method: "get",
      path: "/v1/keys/:id/usage",
      scopes: ["keys:read"],
      handle: async (req, res) => {
        const { id } = parseInput(keyIdParam, req.params, "path");
        res.json(await deps.usage(await operations.get(id)));
      },
    },
  ];
}
