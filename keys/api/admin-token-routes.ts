import { z } from "zod";
import type { Clock } from "../../lib/clock.ts";
import { ApiError } from "../../lib/http/errors.ts";
import { isoOrNull } from "../../lib/key-record.ts";
import { ADMIN_SCOPES, generateAdminToken, hashAdminToken, newAdminTokenId } from "../admin-tokens/tokens.ts";
import type { AdminTokenRecord, KeyRegistry } from "../registry/store.ts";
import { callerOf } from "./auth.ts";
import { parseInput } from "./input.ts";
import type { Route } from "./route.ts";

const newAdminToken = z.strictObject({
  name: z
    .string({ error: "is required: a name of 1 to 100 characters" })
    .regex(/^[A-Za-z0-9][A-Za-z0-9 ._:@-]{0,99}$/, "must be 1 to 100 letters, digits, spaces or . _ : @ -, starting with a letter or digit"),
  scopes: z
    .array(z.enum(ADMIN_SCOPES, { error: `must be one of ${ADMIN_SCOPES.join(", ")}` }), { error: "is required: a list of scopes" })
    .min(1, "must name at least one scope")
    .refine((s) => new Set(s).size === s.length, "must not repeat a scope"),
});

const idParam = z.object({ id: z.string().regex(/^adm_[A-Za-z0-9]{1,64}$/, "is not an admin token id") });

/** An admin token as the API shows it: never the token, never its hash. */
const adminTokenJson = (t: AdminTokenRecord) => ({
  id: t.id,
  name: t.name,
  scopes: t.scopes,
  createdAt: new Date(t.createdAt).toISOString(),
  revokedAt: isoOrNull(t.revokedAt),
});

/** POST|GET /v1/admin-tokens, POST /v1/admin-tokens/{id}/revoke: scope `admin`. The token is shown once, in the 201. */
export function adminTokenRoutes(deps: { registry: KeyRegistry; clock: Clock }): Route[] {
  const { registry, clock } = deps;
  return [
    {
      method: "post",
      path: "/v1/admin-tokens",
      scopes: ["admin"],
      body: ["application/json"],
      handle: async (req, res) => {
        const { name, scopes } = parseInput(newAdminToken, req.body, "body");
        const token = generateAdminToken();
        const now = clock();
        const record: AdminTokenRecord = { id: newAdminTokenId(), name, scopes, hash: hashAdminToken(token), createdAt: now, revokedAt: null };
        await registry.createAdminToken(record, {
          at: now,
          actor: callerOf(res).name,
          type: "admin_token.created",
          keyId: null,
          changes: { id: record.id, name, scopes },
        });
        res.status(201).json({ ...adminTokenJson(record), token });
      },
    },
    {
      method: "get",
      path: "/v1/admin-tokens",
      scopes: ["admin"],
      handle: async (_req, res) => {
        const tokens = await registry.listAdminTokens();
        res.json({ items: tokens.map(adminTokenJson), nextCursor: null });
      },
    },
    {
      method: "post",
      path: "/v1/admin-tokens/:id/revoke",
      scopes: ["admin"],
      handle: async (req, res) => {
        const { id } = parseInput(idParam, req.params, "path");
        const now = clock();
        await registry.revokeAdminToken(id, now, {
          at: now,
          actor: callerOf(res).name,
          type: "admin_token.revoked",
          keyId: null,
          changes: { id, revokedAt: new Date(now).toISOString() },
        });
        // Revoking twice answers the first revocation again (the store keeps the first revokedAt).
        const revoked = (await registry.listAdminTokens()).find((t) => t.id === id);
        if (!revoked) throw new ApiError("not_found", "No such admin token.");
        res.json(adminTokenJson(revoked));
      },
    },
  ];
}
