import { SpanStatusCode, type Span } from "@opentelemetry/api";
import type { RequestHandler, Response } from "express";
import { subjectForKey } from "../../lib/redis-keys.ts";
import { AuthError, type ApiKey } from "../../lib/api-key-format.ts";
import type { KeyVerifier } from "../auth/jwt-verifier.ts";
import { parseBearer } from "../auth/bearer.ts";
import { ApiError } from "../../lib/http/errors.ts";
import { rateLimitHeaders } from "./headers.ts";
import type { Decision, LimiterStore, WindowLimit } from "../limiter/limiter.ts";
import { windowsFor, windowsForLimits } from "./plans.ts";
import { ROLLED } from "../auth/jwt-verifier.ts";
import type { KeyEntry, KeyStateView } from "../auth/key-state.ts";
import { accessDenial, insufficientScopeChallenge } from "../auth/access.ts";
import type { GatewayMetrics } from "../ops/metrics.ts";
import { getOrCreate } from "../../lib/get-or-create.ts";
import { childSpan } from "../../lib/tracing/spans.ts";
import { ME_ROUTE, SELF_SERVICE_ROUTES } from "../usage/me-routes.ts";
import { countAgainstAddress } from "./address-quota.ts";

/** The limiter's decision as a span of the request's trace: the plan it applied and the outcome, never the key. */
const DECISION_SPAN = "limiter decision";

/** Redis unreachable and this replica may admit nothing of the limit (see fallback-store.ts). */
const LIMITER_UNAVAILABLE = new ApiError(
  "service_unavailable",
  "Rate limiting is temporarily unavailable for this key; retry after the time in Retry-After.",
);

/** Before the key service's feed was read once, no key can be decided: never a 401 for a key that may be valid. */
const KEYS_NOT_LOADED = new ApiError("service_unavailable", "The gateway has not loaded the API keys' state from the key service yet; retry after the time in Retry-After.");
/** A key issued a moment ago: how long its first request waits for the feed to bring it. */
const NEW_KEY_WAIT_MS = 1_000;
const KEY_NOT_KNOWN_YET = new ApiError("service_unavailable", "This API key is not known to the gateway yet (it was issued a moment ago); retry after the time in Retry-After.");
const ADDRESS_NOT_ALLOWED = new ApiError("forbidden", "This API key may not be used from this client address (its allowed networks).");

const INVALID_TOKEN_CHALLENGE = `Bearer realm="pet-store", error="invalid_token"`;
/** A request with no credentials at all gets the challenge without an error code (RFC 6750 §3.1). */
const NO_TOKEN_CHALLENGE = `Bearer realm="pet-store"`;

/** The 401 for a key the limiter's store knows is revoked or rolled: still an invalid token (RFC 6750 §3). */
function invalidInStore(outcome: "revoked" | "rolled", res: Response): ApiError {
  res.set("WWW-Authenticate", INVALID_TOKEN_CHALLENGE);
  return new ApiError("unauthorized", outcome === "revoked" ? "This API key has been revoked." : ROLLED);
}

export interface GuardDeps {
  verifier: KeyVerifier;
  limiter: LimiterStore;
  /** Each key's state from the key service (plan in force, scopes, networks): no I/O to read it. */
  keys: KeyStateView;
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
 * (or, without a valid key, against the client address), then refused or let through. A key's
 * own /v1/me* count against the client address only: its holder may look while the key is
 * banned or spent, and looking costs the key nothing (no request, no strike).
 */
export function guard(deps: GuardDeps): RequestHandler {
  // Per verified key (the verifier hands out one frozen object per cached token), or per key state
  // (one object until the next change): its windows, computed once instead of on every request.
  const windowsByKey = new WeakMap<ApiKey | KeyEntry, readonly WindowLimit[]>();
  const windowsOf = (apiKey: ApiKey, entry: KeyEntry | undefined): readonly WindowLimit[] => {
    const limits = entry?.limits;
    if (limits) return getOrCreate(windowsByKey, entry, () => windowsForLimits(limits));
    return getOrCreate(windowsByKey, apiKey, () => windowsFor(apiKey));
  };
  // The plan in force, as the store's record says, else the key service's, else the key's own.
  const planOf = (apiKey: ApiKey | undefined, entry: KeyEntry | undefined, decision: Decision): string =>
    apiKey ? (decision.plan ?? entry?.plan ?? apiKey.plan) : "anonymous";
  const decisions = new Map<string, { inc(): void }>();
  const countDecision = (plan: string, outcome: string) =>
    getOrCreate(decisions, `${plan} ${outcome}`, () => deps.metrics.limiterDecisions.labels({ plan, outcome })).inc();

  return async (req, res, next) => {
    // Keys not loaded yet, or this one not known yet: counted per client address like a request
    // without a key, then 503 (never a 401 for a key that may be valid).
    let undecidable: ApiError | undefined = deps.keys.loaded() ? undefined : KEYS_NOT_LOADED;
    let apiKey: ApiKey | undefined;
    let authError: AuthError | undefined;
    let entry: KeyEntry | undefined;
    try {
      if (!undecidable) apiKey = deps.verifier.verify(parseBearer(req.headers.authorization));
      entry = apiKey && deps.keys.get(apiKey.keyId);
      if (apiKey && !entry) {
        // Signed by the key service but not in the feed yet: issued a moment ago. Its scopes,
        // networks and plan are not known until its creation event arrives (within ~100 ms).
        entry = await deps.keys.whenKnown(apiKey.keyId, NEW_KEY_WAIT_MS);
        if (entry) apiKey = deps.verifier.verify(parseBearer(req.headers.authorization));
        else [apiKey, undecidable] = [undefined, KEY_NOT_KNOWN_YET];
      }
    } catch (err) {
      if (!(err instanceof AuthError)) throw err;
      [apiKey, entry, authError] = [undefined, undefined, err];
    }
    const selfService = SELF_SERVICE_ROUTES.has(res.locals.route ?? "");
    const quotaKey = selfService ? undefined : apiKey;
    const span = childSpan(DECISION_SPAN, {});
    const pending = quotaKey
      ? deps.limiter.hit(subjectForKey(quotaKey.keyId), windowsOf(quotaKey, entry), quotaKey)
      : countAgainstAddress(deps, req);
    const decision = await (span ? recorded(span, pending, (d) => planOf(quotaKey, entry, d)) : pending);
    const plan = planOf(quotaKey, entry, decision);
    const headers = rateLimitHeaders(decision);
    for (const name in headers) res.setHeader(name, headers[name]!);
    countDecision(plan, decision.outcome);

    // A valid key's request counts in its usage history (revoked or rolled in Redis: not valid).
    // Refused by the address's quota, a /v1/me* counts by its status (the key was not refused).
    if (apiKey && decision.outcome !== "revoked" && decision.outcome !== "rolled") res.locals.usage = { keyId: apiKey.keyId };
    const keyRefused = quotaKey ? res.locals.usage : undefined;
    switch (decision.outcome) {
      case "revoked":
      case "rolled":
        throw invalidInStore(decision.outcome, res);
      case "banned":
        if (keyRefused) Object.assign(keyRefused, { refused: "banned", banUntilMs: decision.nowMs + decision.retryAfterSeconds * 1000 });
        throw new ApiError("api_key_banned");
      case "limited":
        if (keyRefused) keyRefused.refused = "limited";
        throw new ApiError("rate_limited");
      case "unavailable":
        throw LIMITER_UNAVAILABLE;
      case "admitted":
        break;
    }
    if (undecidable) throw undecidable;
    if (authError) {
      res.set("WWW-Authenticate", authError.reason === "missing" ? NO_TOKEN_CHALLENGE : INVALID_TOKEN_CHALLENGE);
      throw new ApiError("unauthorized", authError.message);
    }
    // Scopes and networks: after the quota (the request counted like any other), before the pet
    // service. A key's own /v1/me* need neither: its holder may always look.
    const denial = entry && !selfService && accessDenial(entry, req.method, req.ip);
    if (denial && res.locals.usage) res.locals.usage.refused = "forbidden";
    if (denial && denial.reason === "network") throw ADDRESS_NOT_ALLOWED;
    if (denial && denial.reason === "scope") {
      res.set("WWW-Authenticate", insufficientScopeChallenge(denial.scope));
      throw new ApiError("forbidden", `This API key lacks the ${denial.scope} scope this operation needs.`);
    }
    if (apiKey && res.locals.route === ME_ROUTE) {
      // GET /v1/me shows the key's windows and ban as they stand: read, never counted.
      const standing = await deps.limiter.peek(subjectForKey(apiKey.keyId), windowsOf(apiKey, entry), apiKey);
      if (standing.outcome === "revoked" || standing.outcome === "rolled") {
        delete res.locals.usage;
        throw invalidInStore(standing.outcome, res);
      }
      res.locals.standing = standing;
    }
    res.locals.apiKey = apiKey;
    if (entry) res.locals.keyEntry = entry;
    next();
  };
}
