import { SpanStatusCode, type Span } from "@opentelemetry/api";
import type { RequestHandler } from "express";
import { subjectForAddress, subjectForKey } from "../../lib/redis-keys.ts";
import { AuthError, type ApiKey } from "../../lib/api-key-format.ts";
import type { KeyVerifier } from "../auth/jwt-verifier.ts";
import { parseBearer } from "../auth/bearer.ts";
import { ApiError } from "../../lib/http/errors.ts";
import { rateLimitHeaders } from "./headers.ts";
import type { Decision, LimiterStore, WindowLimit } from "../limiter/limiter.ts";
import { windowsFor, windowsForLimits } from "./plans.ts";
import { planOverride, type KeyChange } from "../../lib/key-changes.ts";
import type { KeyChangeList } from "../auth/key-changes.ts";
import { ROLLED } from "../auth/jwt-verifier.ts";
import type { GatewayMetrics } from "../ops/metrics.ts";
import { getOrCreate } from "../../lib/get-or-create.ts";
import { childSpan } from "../../lib/tracing/spans.ts";

/** The limiter's decision as a span of the request's trace: the plan it applied and the outcome, never the key. */
const DECISION_SPAN = "limiter decision";

/** Redis unreachable and this replica may admit nothing of the limit (see fallback-store.ts). */
const LIMITER_UNAVAILABLE = new ApiError(
  "service_unavailable",
  "Rate limiting is temporarily unavailable for this key; retry after the time in Retry-After.",
);

const INVALID_TOKEN_CHALLENGE = `Bearer realm="pet-store", error="invalid_token"`;
/** A request with no credentials at all gets the challenge without an error code (RFC 6750 §3.1). */
const NO_TOKEN_CHALLENGE = `Bearer realm="pet-store"`;

export interface GuardDeps {
  verifier: KeyVerifier;
  limiter: LimiterStore;
  /** The operator's plan overrides in KEYS_DIR: what applies when the limiter's store holds no record of the key. */
  keyChanges: KeyChangeList;
  /** Limits of requests without a valid key, per client address (slows key guessing). */
  anonymousWindows: readonly WindowLimit[];
  metrics: GatewayMetrics;
}

/** The decision, once made, on its span (which it ends), with the plan it applied. */
function recorded(span: Span, pending: Promise<Decision>, planOf: (decision: Decision) => string): Promise<Decision> {
  return pending.then(
    (decision) => {
      span.setAttribute("pet_store.plan", planOf(decision));
      span.setAttribute("pet_store.limiter.outcome", decision.outcome);
      span.end();
      return decision;
    },
    (err: unknown) => {
      span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
      throw err;
    },
  );
}

/**
 * Auth and quota for every /v1 request, in one place so every response (errors included)
 * carries the rate-limit headers: the key is verified, the request is counted against the key
 * (or, without a valid key, against the client address), then refused or let through.
 */
export function guard(deps: GuardDeps): RequestHandler {
  // Per verified key (the verifier hands out one frozen object per cached token), or per change
  // record (one object until the file changes): its windows, computed once instead of on every request.
  const windowsByKey = new WeakMap<ApiKey | KeyChange, readonly WindowLimit[]>();
  const windowsOf = (apiKey: ApiKey): readonly WindowLimit[] => {
    const change = deps.keyChanges.get(apiKey.keyId);
    const override = planOverride(change);
    if (override) return getOrCreate(windowsByKey, change!, () => windowsForLimits(override));
    return getOrCreate(windowsByKey, apiKey, () => windowsFor(apiKey));
  };
  // The plan in force, as the store's record says, else KEYS_DIR's, else the key's own.
  const planOf = (apiKey: ApiKey | undefined, decision: Decision): string =>
    apiKey ? (decision.plan ?? planOverride(deps.keyChanges.get(apiKey.keyId))?.plan ?? apiKey.plan) : "anonymous";
  const decisions = new Map<string, { inc(): void }>();
  const countDecision = (plan: string, outcome: string) =>
    getOrCreate(decisions, `${plan} ${outcome}`, () => deps.metrics.limiterDecisions.labels({ plan, outcome })).inc();

  return async (req, res, next) => {
    let apiKey: ApiKey | undefined;
    let authError: AuthError | undefined;
    try {
      apiKey = deps.verifier.verify(parseBearer(req.headers.authorization));
    } catch (err) {
      if (!(err instanceof AuthError)) throw err;
      authError = err;
    }
    const span = childSpan(DECISION_SPAN, {});
    const pending = apiKey
      ? deps.limiter.hit(subjectForKey(apiKey.keyId), windowsOf(apiKey), apiKey)
      : deps.limiter.hit(subjectForAddress(req.ip ?? "unknown"), deps.anonymousWindows);
    const decision = await (span ? recorded(span, pending, (d) => planOf(apiKey, d)) : pending);
    const plan = planOf(apiKey, decision);
    const headers = rateLimitHeaders(decision);
    for (const name in headers) res.setHeader(name, headers[name]!);
    countDecision(plan, decision.outcome);

    switch (decision.outcome) {
      case "revoked":
        // A 401 like any other (RFC 6750 §3): revoked in Redis is still an invalid token.
        res.set("WWW-Authenticate", INVALID_TOKEN_CHALLENGE);
        throw new ApiError("unauthorized", "This API key has been revoked.");
      case "rolled":
        res.set("WWW-Authenticate", INVALID_TOKEN_CHALLENGE);
        throw new ApiError("unauthorized", ROLLED);
      case "banned":
        throw new ApiError("api_key_banned");
      case "limited":
        throw new ApiError("rate_limited");
      case "unavailable":
        throw LIMITER_UNAVAILABLE;
      case "admitted":
        break;
    }
    if (authError) {
      res.set("WWW-Authenticate", authError.reason === "missing" ? NO_TOKEN_CHALLENGE : INVALID_TOKEN_CHALLENGE);
      throw new ApiError("unauthorized", authError.message);
    }
    res.locals.apiKey = apiKey;
    next();
  };
}
