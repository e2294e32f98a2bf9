/**
 * The keys tooling as a typed API, for a sign-up backend that issues, upgrades and rolls keys
 * (`npm run keys` is a thin command line over the same functions). Every function takes KEYS_DIR
 * first; those that also publish to Redis take `redisUrl` in their options.
 */
export { ensureKeyPair, rotateKeyPair, retireKeyPair, activeKid, listKeyPairs } from "./key-pairs.ts";
export { issueKey, type IssueOptions } from "./issue.ts";
export { revokeKey, type RevokeOptions, type RevokeResult } from "./revoke.ts";
export { setPlan, type SetPlanOptions, type SetPlanResult } from "./set-plan.ts";
export { rollKey, DEFAULT_GRACE_SECONDS, type RollOptions, type RollResult } from "./roll.ts";
export { keyUsage, lastUses, type KeyUsage, type UsageOptions } from "./usage.ts";
export { syncKeys, type SyncResult } from "./sync.ts";
export { listKeys, type KeyListing, type ListOptions } from "./list.ts";
export { parseDuration } from "./duration.ts";
export { KeysError, UsageError } from "./errors.ts";
export type { PlanName } from "../lib/api-key-format.ts";
