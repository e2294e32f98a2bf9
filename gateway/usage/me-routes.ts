/**
 * GET /v1/me and GET /v1/me/usage (DESIGN, Usage history and the consumer's view): the calling
 * key's plan, limits, scopes, current windows and ban, and its usage history. Like GitHub's
 * GET /rate_limit they do not count against the key's quota: any valid key gets them, banned or
 * spent (its holder needs them most then), with no scope and from any network. quota/guard.ts
 * counts them against the client address's anonymous quota instead, and they count in the key's
 * usage history by their status, as any request.
 */
import express, { type Request, type Response } from "express";
import { limitsFor } from "../../lib/plans.ts";
import { DEFAULT_SCOPES, isoOrNull } from "../../lib/key-record.ts";
import { admittedKey } from "../http/locals.ts";
import { DAY_SECONDS, MINUTE_SECONDS } from "../quota/plans.ts";
import type { HistoryReader } from "./key-service-client.ts";

export const ME_ROUTE = "/v1/me";
export const SELF_SERVICE_ROUTES: ReadonlySet<string> = new Set([ME_ROUTE, "/v1/me/usage"]);

/** What GET /v1/me answers (gateway/http/openapi.json, Me). */
export interface MeJson {
  keyId: string;
  name: string | null;
  plan: string;
  limits: { perMinute: number; perDay: number };
  scopes: string[];
  used: { minute: number; day: number };
  remaining: { minute: number; day: number };
  banned: boolean;
  bannedUntil: string | null;
  lastUsedAt: string | null;
}

/** The calling key as the guard read its standing in the limiter (nothing counted): its windows and ban now. */
export function meJson(res: Response): MeJson {
  const apiKey = admittedKey(res.locals);
  const entry = res.locals.keyEntry;
  const decision = res.locals.standing!;
  const window = (seconds: number) => decision.windows.find((w) => w.windowSeconds === seconds);
  const banned = decision.outcome === "banned";
  const limits = entry?.limits ?? limitsFor(apiKey);
  const [minute, day] = [window(MINUTE_SECONDS), window(DAY_SECONDS)];
  const remaining = { minute: minute?.remaining ?? limits.perMinute, day: day?.remaining ?? limits.perDay };
  return {
    keyId: apiKey.keyId,
    name: entry?.name ?? null,
    plan: decision.plan ?? entry?.plan ?? apiKey.plan,
    limits: { perMinute: limits.perMinute, perDay: limits.perDay },
    scopes: [...(entry?.scopes ?? DEFAULT_SCOPES)],
    used: { minute: Math.max(0, (minute?.limit ?? limits.perMinute) - remaining.minute), day: Math.max(0, (day?.limit ?? limits.perDay) - remaining.day) },
    remaining,
    banned,
    bannedUntil: banned ? isoOrNull(decision.nowMs + decision.retryAfterSeconds * 1000) : null,
    lastUsedAt: isoOrNull(decision.nowMs),
  };
}

/** The two routes, mounted behind the guard on the /v1 router. */
export function meRoutes(history: HistoryReader): express.Router {
  const router = express.Router({ caseSensitive: true, strict: true });
  router.get("/me", (_req: Request, res: Response) => {
    res.json(meJson(res));
  });
  router.get("/me/usage", async (req: Request, res: Response) => {
    const query = new URLSearchParams(req.url.split("?")[1] ?? "");
    const answer = await history(admittedKey(res.locals).keyId, query);
    res.status(answer.status).type("application/json").send(answer.body);
  });
  return router;
}
