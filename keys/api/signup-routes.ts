import { z } from "zod";
import { ApiError } from "../../lib/http/errors.ts";
import { SIGNUP_FORM } from "../../lib/signup.ts";
import type { FeedFollower } from "../feed/follower.ts";
import { SignupLimitError, signupAddress, type Signups } from "../signups/signups.ts";
import { callerOf } from "./auth.ts";
import { parseInput } from "./input.ts";
import type { Route } from "./route.ts";

const signupBody = SIGNUP_FORM.extend({
  clientAddress: z.string({ error: "is required: the client's IP address" }).refine((a) => signupAddress(a) !== undefined, "must be an IPv4 or IPv6 address"),
});

/**
 * POST /v1/signups: a gateway's portal asks for a Free key on behalf of a client (scope `gateway`,
 * the one thing that scope may create). 201 with the record and `key`, shown once, as POST /v1/keys.
 */
export function signupRoutes(deps: { signups: Signups; follower: FeedFollower }): Route[] {
  return [
    {
      method: "post",
      path: "/v1/signups",
      scopes: ["gateway"],
      body: ["application/json"],
      handle: async (req, res) => {
        const request = parseInput(signupBody, req.body, "body");
        try {
          const created = await deps.signups.signUp(request, callerOf(res).name);
          deps.follower.poke();
          res.status(201).type("application/json").send(created.body);
        } catch (err) {
          if (!(err instanceof SignupLimitError)) throw err;
          res.setHeader("Retry-After", String(err.retryAfterSeconds));
          throw new ApiError("rate_limited", "This client address has had its sign-ups for today (UTC); retry after the time in Retry-After.");
        }
      },
    },
  ];
}
