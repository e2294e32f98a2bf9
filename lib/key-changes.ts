/**
 * KEYS_DIR/key-changes.json: what the operator changed about issued keys since they were issued,
 * as the keys tooling wrote it before the key registry (keys/registry/); `keys import` reads it
 * into the registry (gateways follow the key service, never this file).
 *
 *   { "keys": { "<keyId>": {
 *       "plan": "business", "perMinute": 1000, "perDay": 100000,   // set-plan: the plan in force
 *       "planChangedAt": 1790000000,
 *       "generation": 2,                                          // keys roll: the newest key's
 *       "graceUntil": { "0": 1790086400, "1": 1790090000 },       // older keys work until then
 *       "rolledAt": 1790003600 } } }
 * Times are Unix seconds.
 */
import path from "node:path";
import { z } from "zod";
import { readOptionalFile } from "./optional-file.ts";
import { PLAN_NAMES, type PlanName } from "./api-key-format.ts";

const positiveInt = z.number().int().positive().max(Number.MAX_SAFE_INTEGER);

const keyChangeSchema = z.object({
  plan: z.enum(PLAN_NAMES).optional(),
  perMinute: positiveInt.optional(),
  perDay: positiveInt.optional(),
  planChangedAt: z.number().int().optional(),
  generation: z.number().int().nonnegative().optional(),
  graceUntil: z.record(z.string().regex(/^\d+$/), z.number().int()).optional(),
  rolledAt: z.number().int().optional(),
});
export type KeyChange = z.infer<typeof keyChangeSchema>;

const keyChangesSchema = z.object({
  keys: z
    .record(z.string(), keyChangeSchema)
    // Own entries only: a key id such as "constructor" has no change.
    .transform((keys) => Object.assign(Object.create(null) as typeof keys, keys)),
});
export type KeyChanges = z.infer<typeof keyChangesSchema>;

export const keyChangesFilePath = (keysDir: string): string => path.join(keysDir, "key-changes.json");

export const parseKeyChanges = (text: string): KeyChanges => keyChangesSchema.parse(JSON.parse(text));

/** Reads key-changes.json; a missing file is no change at all. Throws on a corrupt file. */
export function readKeyChanges(keysDir: string): KeyChanges {
  const text = readOptionalFile(keyChangesFilePath(keysDir));
  return text === undefined ? { keys: Object.create(null) as KeyChanges["keys"] } : parseKeyChanges(text);
}

/** The plan and limits a set-plan put in force, if any. */
export interface PlanOverride {
  plan: PlanName;
  perMinute: number;
  perDay: number;
}

export function planOverride(change: KeyChange | undefined): PlanOverride | undefined {
  if (!change?.plan || change.perMinute === undefined || change.perDay === undefined) return undefined;
  return { plan: change.plan, perMinute: change.perMinute, perDay: change.perDay };
}
