/**
 * Rate-limit response headers for a Decision.
 *
 * - `X-RateLimit-Limit` / `-Remaining` / `-Reset`: the binding window (least remaining; on 429
 *   the window that refuses longest). Reset is the Unix second at which that window has its
 *   full quota back if no further requests arrive (for a sliding window, quota also comes back
 *   gradually before that, as old buckets leave the window).
 * - `Retry-After` (limited or banned): whole seconds until the first moment a retry is admitted.
 * - `RateLimit-Policy` / `RateLimit` (draft-ietf-httpapi-ratelimit-headers-11): one Structured
 *   Field list item per window, e.g.
 *     RateLimit-Policy: "minute";q=60;w=60, "day";q=1000;w=86400
 *     RateLimit: "minute";r=59;t=61, "day";r=999;t=87840
 *   `t` is the number of seconds during which no more than `r` can be used: until the window's
 *   available quota next grows (its oldest counted bucket leaves; for an exhausted window, the
 *   first moment it admits again).
 * While banned, nothing is available: remaining/r are 0, `t` runs to the end of the ban (or
 * later for an exhausted window) and Reset is no earlier than the end of the ban.
 */
import { getOrCreate } from "../../lib/get-or-create.ts";
import type { Decision } from "../limiter/limiter.ts";

const NAMES: Readonly<Record<number, string>> = { 60: "minute", 3600: "hour", 86_400: "day" };

/** The policy identifier of a window: "minute", "hour", "day", else "<seconds>s". */
export const policyName = (windowSeconds: number): string => NAMES[windowSeconds] ?? `${windowSeconds}s`;

/** A Structured Field String (RFC 9651 §3.3.3): printable ASCII, `"` and `\` escaped. */
function sfString(value: string): string {
  if (!/^[\x20-\x7e]*$/.test(value)) throw new RangeError(`rate limit policy name must be printable ASCII: ${value}`);
  return `"${value.replace(/[\\"]/g, "\\$&")}"`;
}

/** The quoted policy name of each window length, made once (the same few lengths every request). */
const quotedNames = new Map<number, string>();
const quotedPolicyName = (windowSeconds: number): string =>
  getOrCreate(quotedNames, windowSeconds, () => sfString(policyName(windowSeconds)));

export function rateLimitHeaders(decision: Decision, names?: readonly string[]): Record<string, string> {
  const { windows, nowMs, retryAfterSeconds } = decision;
  const banned = decision.outcome === "banned";
  const nowSeconds = Math.ceil(nowMs / 1000);
  const view = windows.map((w, i) => {
    const untilRelease = Math.max(0, Math.ceil((w.releaseAtMs - nowMs) / 1000));
    return {
      name: names?.[i] !== undefined ? sfString(names[i]!) : quotedPolicyName(w.windowSeconds),
      limit: w.limit,
      windowSeconds: w.windowSeconds,
      remaining: banned ? 0 : w.remaining,
      reset: banned ? Math.max(w.resetAt, nowSeconds + retryAfterSeconds) : w.resetAt,
      // While banned, r grows from 0 when the ban ends (or later, if the window is exhausted too).
      t: banned ? Math.max(w.remaining > 0 ? 0 : untilRelease, retryAfterSeconds) : untilRelease,
    };
  });
  const binding = view[decision.binding] ?? view[0]!;
  const headers: Record<string, string> = {
    "X-RateLimit-Limit": String(binding.limit),
    "X-RateLimit-Remaining": String(binding.remaining),
    "X-RateLimit-Reset": String(binding.reset),
    "RateLimit-Policy": view.map((v) => `${v.name};q=${v.limit};w=${v.windowSeconds}`).join(", "),
    RateLimit: view.map((v) => `${v.name};r=${v.remaining};t=${v.t}`).join(", "),
  };
  if (retryAfterSeconds > 0) headers["Retry-After"] = String(retryAfterSeconds);
  return headers;
}
