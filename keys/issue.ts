import { randomBytes } from "node:crypto";
import jwt from "jsonwebtoken";
import { KEY_ALGORITHM, KEY_AUDIENCE, KEY_ISSUER, type KeyClaims, type PlanName } from "../lib/api-key-format.ts";
import { UsageError } from "./errors.ts";
import { loadSigningKey } from "./key-pairs.ts";
import type { FieldProblem } from "./operations/errors.ts";

export interface IssueOptions {
  plan: PlanName;
  /** Enterprise only, and then required (with perDay). */
  perMinute?: number;
  perDay?: number;
  /** Lifetime; absent = the key does not expire. */
  expiresInSeconds?: number;
  /** A label (who the key is for). */
  name?: string;
  /** Milliseconds since the epoch; defaults to now. */
  now?: number;
}

const isLimit = (n: unknown): boolean => Number.isSafeInteger(n) && (n as number) >= 1;

/** What is wrong with a plan and its limits (enterprise: both limits, per day at least per minute; others: none). */
export function planLimitProblems({ plan, perMinute, perDay }: { plan: PlanName; perMinute?: number | null; perDay?: number | null }): FieldProblem[] {
  const problems: FieldProblem[] = [];
  if (plan === "enterprise") {
    for (const [field, n] of [["perMinute", perMinute], ["perDay", perDay]] as const) {
      if (n === undefined || n === null) problems.push({ field, message: "is required for the enterprise plan" });
      else if (!isLimit(n)) problems.push({ field, message: "must be a positive integer" });
    }
    if (problems.length === 0 && perDay! < perMinute!) problems.push({ field: "perDay", message: `must be at least perMinute (${perMinute})` });
  } else {
    for (const [field, n] of [["perMinute", perMinute], ["perDay", perDay]] as const) {
      if (n !== undefined && n !== null) problems.push({ field, message: `is for enterprise keys only; the ${plan} plan has fixed limits` });
    }
  }
  return problems;
}

export const newKeyId = (): string => `key_${randomBytes(8).toString("hex")}`;

/**
 * Signs a token for a new key id without recording it anywhere: npm start's demo key and the
 * gateway's tests used it before the key service; a key the registry holds is created through
 * keys/operations. Throws UsageError for a bad plan or limits, KeysError before `init`.
 */
export function issueKey(keysDir: string, opts: IssueOptions): string {
  const [problem] = planLimitProblems(opts);
  if (problem) throw new UsageError(`${problem.field} ${problem.message}`);
  const iat = Math.floor((opts.now ?? Date.now()) / 1000);
  const claims: KeyClaims = { sub: newKeyId(), plan: opts.plan };
  if (opts.plan === "enterprise") claims.lim = { m: opts.perMinute!, d: opts.perDay! };
  return signKey(keysDir, claims, iat, opts.expiresInSeconds === undefined ? null : iat + opts.expiresInSeconds).token;
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
