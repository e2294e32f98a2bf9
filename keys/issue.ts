import { randomBytes } from "node:crypto";
import jwt from "jsonwebtoken";
import { KEY_ALGORITHM, KEY_AUDIENCE, KEY_ISSUER, type KeyClaims, type PlanName } from "../lib/api-key-format.ts";
import { UsageError } from "./errors.ts";
import { loadSigningKey } from "./key-pairs.ts";
import { appendIssued } from "./registry.ts";

export interface IssueOptions {
  plan: PlanName;
  /** Enterprise only, and then required (with perDay). */
  perMinute?: number;
  perDay?: number;
  /** Lifetime; absent = the key does not expire. */
  expiresInSeconds?: number;
  /** A label for `list` (who the key is for). */
  name?: string;
  /** Milliseconds since the epoch; defaults to now. */
  now?: number;
}

const MAX_NAME_LENGTH = 200;

/** Throws UsageError unless the plan and limits go together (enterprise: both limits; others: none). */
export function validatePlanLimits(opts: Pick<IssueOptions, "plan" | "perMinute" | "perDay">): void {
  const { plan, perMinute, perDay } = opts;
  if (plan === "enterprise") {
    if (perMinute === undefined || perDay === undefined) {
      throw new UsageError("enterprise keys need both --per-minute and --per-day");
    }
    for (const [flag, n] of [["--per-minute", perMinute], ["--per-day", perDay]] as const) {
      if (!Number.isSafeInteger(n) || n < 1) throw new UsageError(`${flag} must be a positive integer; got ${n}`);
    }
    if (perDay < perMinute) throw new UsageError(`--per-day (${perDay}) must be at least --per-minute (${perMinute})`);
  } else if (perMinute !== undefined || perDay !== undefined) {
    throw new UsageError(`--per-minute and --per-day are for enterprise keys only; the ${plan} plan has fixed limits`);
  }
}

/** Throws UsageError unless the options describe a valid key. */
export function validateIssueOptions(opts: IssueOptions): void {
  validatePlanLimits(opts);
  const { expiresInSeconds, name } = opts;
  if (expiresInSeconds !== undefined && !(Number.isSafeInteger(expiresInSeconds) && expiresInSeconds > 0)) {
    throw new UsageError(`the lifetime must be a positive number of seconds; got ${expiresInSeconds}`);
  }
  if (name !== undefined && (name.length > MAX_NAME_LENGTH || /\p{Cc}/u.test(name))) {
    throw new UsageError(`--name must be at most ${MAX_NAME_LENGTH} characters without control characters`);
  }
}

export const newKeyId = (): string => `key_${randomBytes(8).toString("hex")}`;

/**
 * Signs a new API key with the active signing pair, records it in issued.jsonl (without the
 * token) and returns the token. Throws UsageError for bad options, KeysError before `init`.
 */
export function issueKey(keysDir: string, opts: IssueOptions): string {
  validateIssueOptions(opts);
  const iat = Math.floor((opts.now ?? Date.now()) / 1000);
  const exp = opts.expiresInSeconds === undefined ? null : iat + opts.expiresInSeconds;
  const claims: KeyClaims = { sub: newKeyId(), plan: opts.plan };
  if (opts.plan === "enterprise") claims.lim = { m: opts.perMinute!, d: opts.perDay! };
  const { token, kid } = signKey(keysDir, claims, iat, exp);
  appendIssued(keysDir, {
    keyId: claims.sub,
    name: opts.name ?? "",
    plan: opts.plan,
    ...(claims.lim ? { perMinute: claims.lim.m, perDay: claims.lim.d } : {}),
    kid,
    createdAt: iat,
    expiresAt: exp,
  });
  return token;
}

/** Signs a key's claims with the active signing pair (KeysError before `init`). */
export function signKey(keysDir: string, claims: KeyClaims, iat: number, exp: number | null): { token: string; kid: string } {
  const { kid, privateKey } = loadSigningKey(keysDir);
  const token = jwt.sign({ ...claims, iat, ...(exp === null ? {} : { exp }) }, privateKey, {
    algorithm: KEY_ALGORITHM,
    keyid: kid,
    issuer: KEY_ISSUER,
    audience: KEY_AUDIENCE,
  });
  return { token, kid };
}
