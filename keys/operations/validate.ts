import { PLAN_NAMES, type PlanName } from "../../lib/api-key-format.ts";
import { SCOPES, type Scope } from "../../lib/key-record.ts";
import { isValidCidr } from "../../lib/networks.ts";
import { planLimitProblems } from "../issue.ts";
import type { FieldProblem } from "./errors.ts";

/**
 * The rules a key's fields follow whoever writes them (the admin API, the command line). Each
 * check adds what it refuses to `problems`, so one answer names every bad field.
 */
export const MAX_NAME_LENGTH = 200;
export const MAX_CIDRS = 100;
/** metadata as JSON text, at most: a small object of the operator's, not a document store. */
export const MAX_METADATA_BYTES = 4096;

export function checkName(name: unknown, problems: FieldProblem[], field = "name"): void {
  if (typeof name !== "string" || name.length > MAX_NAME_LENGTH || /\p{Cc}/u.test(name)) {
    problems.push({ field, message: `must be text of at most ${MAX_NAME_LENGTH} characters without control characters` });
  }
}

export function checkPlan(plan: unknown, problems: FieldProblem[]): plan is PlanName {
  if ((PLAN_NAMES as readonly unknown[]).includes(plan)) return true;
  problems.push({ field: "plan", message: `must be one of ${PLAN_NAMES.join(", ")}` });
  return false;
}

export function checkLimits(limits: { plan: PlanName; perMinute?: number | null; perDay?: number | null }, problems: FieldProblem[]): void {
  problems.push(...planLimitProblems(limits));
}

export function checkScopes(scopes: unknown, problems: FieldProblem[]): Scope[] | undefined {
  if (!Array.isArray(scopes) || scopes.length === 0 || !scopes.every((s) => (SCOPES as readonly unknown[]).includes(s))) {
    problems.push({ field: "scopes", message: `must be a non-empty list of ${SCOPES.join(", ")}` });
    return undefined;
  }
  // In SCOPES' order, once each: the same set is always written the same way.
  return SCOPES.filter((s) => scopes.includes(s));
}

export function checkCidrs(cidrs: unknown, problems: FieldProblem[]): string[] | undefined {
  if (!Array.isArray(cidrs) || cidrs.length > MAX_CIDRS) {
    problems.push({ field: "allowedCidrs", message: `must be a list of at most ${MAX_CIDRS} IPv4 or IPv6 CIDRs` });
    return undefined;
  }
  const bad = cidrs.findIndex((c) => typeof c !== "string" || !isValidCidr(c));
  if (bad !== -1) {
    problems.push({ field: `allowedCidrs.${bad}`, message: "is not an IPv4 or IPv6 CIDR (e.g. 203.0.113.0/24, 2001:db8::/32)" });
    return undefined;
  }
  return [...new Set(cidrs as string[])];
}

export function checkOwnerId(ownerId: unknown, problems: FieldProblem[]): void {
  if (ownerId !== null && (typeof ownerId !== "string" || ownerId.length === 0 || ownerId.length > MAX_NAME_LENGTH || /\p{Cc}/u.test(ownerId))) {
    problems.push({ field: "ownerId", message: `must be null or text of 1 to ${MAX_NAME_LENGTH} characters without control characters` });
  }
}

export function checkMetadata(metadata: unknown, problems: FieldProblem[]): void {
  if (typeof metadata !== "object" || metadata === null || Array.isArray(metadata)) {
    problems.push({ field: "metadata", message: "must be a JSON object" });
  } else if (Buffer.byteLength(JSON.stringify(metadata)) > MAX_METADATA_BYTES) {
    problems.push({ field: "metadata", message: `must be at most ${MAX_METADATA_BYTES} bytes as JSON` });
  }
}

/** An expiry as ms: a number of ms or an ISO 8601 time; `future` refuses one not after `now`. */
export function checkExpiry(value: unknown, now: number, future: boolean, problems: FieldProblem[]): number | null | undefined {
  if (value === null) return null;
  const ms = typeof value === "string" && /^\d{4}-\d\d-\d\dT/.test(value) ? Date.parse(value) : typeof value === "number" ? value : NaN;
  if (!Number.isSafeInteger(ms) || ms < 0) {
    problems.push({ field: "expiresAt", message: "must be an ISO 8601 time or null" });
    return undefined;
  }
  if (future && ms <= now) {
    problems.push({ field: "expiresAt", message: "must be in the future" });
    return undefined;
  }
  return ms;
}
