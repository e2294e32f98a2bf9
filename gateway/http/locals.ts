import type { Span } from "@opentelemetry/api";
import type { ApiKey } from "../../lib/api-key-format.ts";
import type { UsageOutcome } from "../../lib/usage-history.ts";
import type { Decision } from "../limiter/limiter.ts";
import type { KeyEntry } from "../auth/key-state.ts";

/**
 * The gateway's per-request state, declared once: Express's `res.locals`, typed. Each field says
 * who sets it; readers take it from here, never through a cast.
 */
declare global {
  namespace Express {
    interface Locals {
      /** Every request: the caller's sane X-Request-Id or a new UUID (lib/http/request-context.ts). */
      requestId: string;
      /** Every request: its SERVER span, recording or not (trace-requests.ts); logs and exemplars name its trace. */
      span: Span;
      /** The route template labelling metrics and logs (`/v1/pets/:petId`, an upstream's prefix), once matched (app.ts). */
      route?: string;
      /** The verified API key, once the guard admitted the request (quota/guard.ts); unset for anonymous requests. */
      apiKey?: ApiKey;
      /**
       * A request with a valid key, as the guard decided it (quota/guard.ts): counted in the key's
       * usage history (gateway/usage/count-requests.ts) by `refused`, else by its status class.
       */
      usage?: { keyId: string; refused?: UsageOutcome; banUntilMs?: number };
      /** GET /v1/me: the key's windows and ban as the limiter holds them, read without counting (quota/guard.ts), and the key's state. */
      standing?: Decision;
      keyEntry?: KeyEntry;
    }
  }
}

/** The key of a request the guard admitted: every /v1 operation runs after it. */
export function admittedKey(locals: Express.Locals): ApiKey {
  if (!locals.apiKey) throw new Error("a /v1 operation ran before the guard admitted its key");
  return locals.apiKey;
}
