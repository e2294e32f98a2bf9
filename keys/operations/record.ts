import { PLANS } from "../../lib/plans.ts";
import { DEFAULT_SCOPES, keyRecordJson, type KeyRecord, type KeyRecordJson } from "../../lib/key-record.ts";
import type { PlanName } from "../../lib/api-key-format.ts";
import { newKeyId, planLimitProblems } from "../issue.ts";
import { KeyValidationError, type FieldProblem } from "./errors.ts";
import { checkCidrs, checkExpiry, checkLimits, checkMetadata, checkName, checkOwnerId, checkPlan, checkScopes } from "./validate.ts";

/** What a new key may be given (the admin API's POST /v1/keys body; the command line's `issue`). */
export interface CreateKeyInput {
  name?: string;
  plan: PlanName;
  /** Enterprise only, and then required (with perDay). */
  perMinute?: number;
  perDay?: number;
  /** ms since the epoch or an ISO 8601 time; null or absent: never expires. */
  expiresAt?: number | string | null;
  /** Default: every scope. */
  scopes?: string[];
  allowedCidrs?: string[];
  ownerId?: string | null;
  metadata?: Record<string, unknown>;
}

/** A JSON Merge Patch (RFC 7396) of a key: a field left out is kept, null clears it (DESIGN, PATCH /v1/keys/{id}). */
export interface KeyPatch {
  name?: string;
  plan?: PlanName;
  perMinute?: number | null;
  perDay?: number | null;
  metadata?: Record<string, unknown> | null;
  scopes?: string[] | null;
  allowedCidrs?: string[] | null;
  expiresAt?: number | string | null;
  ownerId?: string | null;
}

const PATCH_FIELDS = new Set(["name", "plan", "perMinute", "perDay", "metadata", "scopes", "allowedCidrs", "expiresAt", "ownerId"]);

const limitsOf = (plan: PlanName, perMinute: number | undefined | null, perDay: number | undefined | null) =>
  plan === "enterprise" ? { perMinute: perMinute!, perDay: perDay! } : { ...PLANS[plan] };

function refuse(problems: FieldProblem[]): void {
  if (problems.length > 0) throw new KeyValidationError(problems);
}

/** A new key's record (kid still to be set by signing); throws KeyValidationError naming every bad field. */
export function newKeyRecord(input: CreateKeyInput, now: number): KeyRecord {
  const problems: FieldProblem[] = [];
  const name = input.name ?? "";
  checkName(name, problems);
  const planOk = checkPlan(input.plan, problems);
  if (planOk) checkLimits(input, problems);
  const scopes = input.scopes === undefined ? [...DEFAULT_SCOPES] : checkScopes(input.scopes, problems);
  const allowedCidrs = input.allowedCidrs === undefined ? [] : checkCidrs(input.allowedCidrs, problems);
  const ownerId = input.ownerId ?? null;
  checkOwnerId(ownerId, problems);
  const metadata = input.metadata ?? {};
  checkMetadata(metadata, problems);
  const expiresAt = input.expiresAt === undefined ? null : checkExpiry(input.expiresAt, now, true, problems);
  refuse(problems);
  return {
    id: newKeyId(),
    name,
    ownerId,
    metadata,
    plan: input.plan,
    limits: limitsOf(input.plan, input.perMinute, input.perDay),
    scopes: scopes!,
    allowedCidrs: allowedCidrs!,
    createdAt: now,
    expiresAt: expiresAt!,
    revokedAt: null,
    generation: 0,
    graceUntil: {},
    kid: "",
    lastUsedAt: null,
  };
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** RFC 7396 on a JSON value: objects merge member by member, null removes, anything else replaces. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const result: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete result[k];
    // defineProperty: a member named __proto__ is a member, not the prototype.
    else Object.defineProperty(result, k, { value: mergePatch(result[k], v), enumerable: true, writable: true, configurable: true });
  }
  return result;
}

/** `current` with `patch` applied; throws KeyValidationError naming every bad field. */
export function patchedRecord(current: KeyRecord, patch: KeyPatch, now: number): KeyRecord {
  const problems: FieldProblem[] = [];
  if (typeof patch !== "object" || patch === null || Array.isArray(patch)) throw new KeyValidationError([{ field: "body", message: "must be a JSON object" }]);
  for (const field of Object.keys(patch)) if (!PATCH_FIELDS.has(field)) problems.push({ field, message: "is not a known field" });
  const next: KeyRecord = { ...current };
  if ("name" in patch) {
    checkName(patch.name, problems);
    next.name = patch.name!;
  }
  if ("ownerId" in patch) {
    checkOwnerId(patch.ownerId, problems);
    next.ownerId = patch.ownerId!;
  }
  if ("metadata" in patch) {
    if (patch.metadata === null) next.metadata = {};
    else if (!isObject(patch.metadata)) problems.push({ field: "metadata", message: "must be a JSON object or null" });
    else {
      next.metadata = mergePatch(current.metadata, patch.metadata) as Record<string, unknown>;
      checkMetadata(next.metadata, problems);
    }
  }
  if ("scopes" in patch) next.scopes = patch.scopes === null ? [...DEFAULT_SCOPES] : checkScopes(patch.scopes, problems)!;
  if ("allowedCidrs" in patch) next.allowedCidrs = patch.allowedCidrs === null ? [] : checkCidrs(patch.allowedCidrs, problems)!;
  if ("expiresAt" in patch) next.expiresAt = checkExpiry(patch.expiresAt, now, false, problems)!;
  const plan = "plan" in patch ? patch.plan : current.plan;
  if (checkPlan(plan, problems)) {
    // Staying on enterprise keeps a limit the patch leaves out; any other plan has its own.
    const kept = (field: "perMinute" | "perDay") => (field in patch ? patch[field] : current.plan === "enterprise" ? current.limits[field] : undefined);
    const limits = plan === "enterprise" ? { perMinute: kept("perMinute"), perDay: kept("perDay") } : { perMinute: patch.perMinute, perDay: patch.perDay };
    problems.push(...planLimitProblems({ plan, ...limits }));
    next.plan = plan;
    next.limits = limitsOf(plan, limits.perMinute, limits.perDay);
  }
  refuse(problems);
  return next;
}

/** The wire fields an event reports when they change (lib/key-record.ts KeyEvent). */
const CHANGE_FIELDS = ["name", "ownerId", "metadata", "plan", "limits", "scopes", "allowedCidrs", "expiresAt", "revokedAt", "generation"] as const;

/** Older generations' grace ends as events carry them: {generation: ISO time}. */
export const graceUntilJson = (graceUntil: KeyRecord["graceUntil"]): Record<string, string> =>
  Object.fromEntries(Object.entries(graceUntil).map(([generation, until]) => [generation, new Date(until).toISOString()]));

/**
 * key.created's changes: every wire field but lastUsedAt, and the signing pair; and the grace
 * ends of an imported key rolled before, so its older tokens keep working on every gateway.
 */
export function createdChanges(r: KeyRecord): Record<string, unknown> {
  const { lastUsedAt: _never, ...fields } = keyRecordJson(r);
  return { ...fields, kid: r.kid, ...(Object.keys(r.graceUntil).length > 0 && { graceUntil: graceUntilJson(r.graceUntil) }) };
}

/** The wire fields that differ between `before` and `after`, with their new values; `kid` when it changed. */
export function changedFields(before: KeyRecord, after: KeyRecord): Record<string, unknown> {
  const [a, b] = [keyRecordJson(before), keyRecordJson(after)] as Record<keyof KeyRecordJson, unknown>[];
  const changes: Record<string, unknown> = {};
  for (const field of CHANGE_FIELDS) if (JSON.stringify(a![field]) !== JSON.stringify(b![field])) changes[field] = b![field];
  if (before.kid !== after.kid) changes.kid = after.kid;
  return changes;
}
