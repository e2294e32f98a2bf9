/**
 * GET /v1/me and GET /v1/me/usage (DESIGN, Usage history and the consumer's view): the calling
 * key's plan, limits, scopes and current windows, and its usage history. They need no scope and
 * are never forbidden (quota/guard.ts skips scopes and networks for them), and go through the
 * quota like any request, so they count.
 */
import express, { type Request, type Response } from "express";
import { limitsFor } from "../../lib/plans.ts";
import { DEFAULT_SCOPES, isoOrNull } from "../../lib/key-record.ts";
import { admittedKey } from "../http/locals.ts";
import { DAY_SECONDS, MINUTE_SECONDS } from "../quota/plans.ts";
import type { HistoryReader } from "./key-service-client.ts";

export const SELF_SERVICE_ROUTES: ReadonlySet<string> = new Set(["/v1/me", "/v1/me/usage"]);

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

/**
 * The calling key as the guard just decided it: the windows are the limiter's answer to this very
 * request (no further read, nothing counted twice). A banned key never gets here (429
 * api_key_banned with Retry-After), so banned is false.
 */
export function meJson(res: Response): MeJson {
  const apiKey = admittedKey(res.locals);
  const entry = res.locals.keyEntry;
  const decision = res.locals.decision!;
  const window = (seconds: number) => decision.windows.find((w) => w.windowSeconds === seconds);
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
    banned: false,
    bannedUntil: null,
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
