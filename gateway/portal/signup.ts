import express, { type RequestHandler } from "express";
import { ApiError } from "../../lib/http/errors.ts";
import type { Logger } from "../../lib/logger.ts";
import { parseSignupForm } from "../../lib/signup.ts";
import { keyServiceEndpoint } from "../auth/key-service-endpoint.ts";
import { jsonBody } from "../http/input.ts";
import { countAgainstAddress, type AddressQuota } from "../quota/address-quota.ts";

/** Each try counts against its client address's anonymous quota first (as /v1 without a key), so a flood never reaches the key service. */
export interface SignupDeps extends AddressQuota {
  /** KEYS_URL. */
  keysUrl: string;
  /** KEYS_SERVICE_TOKEN (scope `gateway`). */
  keysToken: string | undefined;
  logger: Logger;
  /** How long the key service gets to answer (default 5 s). */
  timeoutMs?: number;
}

/** A form is two short fields. */
const BODY_LIMIT_BYTES = 4 * 1024;
/** What a 503 of ours asks the page to wait. */
const RETRY_AFTER_SECONDS = 5;

const unavailable = () => {
  const err = new ApiError("service_unavailable", "Sign-up is not available right now; try again in a moment.");
  err.retryAfterSeconds = RETRY_AFTER_SECONDS;
  return err;
};

/**
 * POST /portal/signup {name, email}: counted against the client address's anonymous quota (429
 * `rate_limited` past it, as /v1 without a key), checked here (400 naming fields), then the key service's
 * POST /v1/signups with this gateway's token and the client's address (as TRUST_PROXY resolves
 * it), whose answer is passed on: 201 with the key (never stored, never logged, not cacheable),
 * 400, 429 with Retry-After. A key service that is down, slow or refuses the token → 503.
 */
export function signupHandler(deps: SignupDeps): RequestHandler[] {
  const { base, headers } = keyServiceEndpoint({ url: deps.keysUrl, token: deps.keysToken }, { "Content-Type": "application/json" });
  const readBody = express.raw({ type: () => true, limit: BODY_LIMIT_BYTES });
  let loggedRefusal = false;
  return [
    readBody,
    async (req, res) => {
      const decision = await countAgainstAddress(deps, req);
      if (decision.outcome !== "admitted") {
        res.setHeader("Retry-After", String(Math.max(1, decision.retryAfterSeconds)));
        if (decision.outcome === "unavailable") throw unavailable();
        throw new ApiError(decision.outcome === "banned" ? "api_key_banned" : "rate_limited");
      }
      const form = parseSignupForm(jsonBody(req));
      let answer: Response;
      try {
        answer = await fetch(`${base}/v1/signups`, {
          method: "POST",
          headers,
          body: JSON.stringify({ ...form, clientAddress: req.ip }),
          signal: AbortSignal.timeout(deps.timeoutMs ?? 5_000),
        });
      } catch (err) {
        deps.logger.warn({ err: (err as Error).message }, "sign-up: the key service did not answer");
        throw unavailable();
      }
      const text = await answer.text();
      if (answer.status === 401 || answer.status === 403) {
        if (!loggedRefusal) deps.logger.error({ status: answer.status }, "sign-up: the key service refused this gateway's token (KEYS_SERVICE_TOKEN needs the gateway scope)");
        loggedRefusal = true;
        throw unavailable();
      }
      if (![201, 400, 429].includes(answer.status)) throw unavailable();
      const retryAfter = answer.headers.get("retry-after");
      if (retryAfter) res.setHeader("Retry-After", retryAfter);
      res.setHeader("Cache-Control", "no-store");
      res.status(answer.status).type("application/json").send(text);
    },
  ];
}
