/**
 * The keys library as a typed API, for code that manages keys in-process (the key service, a
 * sign-up backend in TypeScript, `npm run keys`): open the registry KEYS_DB names, then create,
 * change, roll and revoke keys through the operations, which sign with KEYS_DIR's active pair and
 * record one event per change. Anything else should use the key service's admin API.
 */
export { ensureKeyPair, rotateKeyPair, retireKeyPair, activeKid, listKeyPairs } from "./key-pairs.ts";
export { issueKey, type IssueOptions } from "./issue.ts";
export { openRegistry, type OpenRegistryOptions } from "./registry/open.ts";
export { RegistryConflictError, InvalidCursorError, type KeyRegistry } from "./registry/store.ts";
export {
  createKeyOperations,
  DEFAULT_GRACE_SECONDS,
  IdempotencyKeyReusedError,
  KeyConflictError,
  KeyNotFoundError,
  KeyValidationError,
  type CreateKeyInput,
  type KeyOperations,
  type KeyPatch,
} from "./operations/index.ts";
export { publishKeyRecord, withRedis } from "./redis.ts";
export { importKeysDir, type ImportResult } from "./import.ts";
export { keyUsage, lastUses, type KeyUsage, type UsageOptions } from "./usage.ts";
export { syncKeys, type SyncResult } from "./sync.ts";
export { listKeys, type KeyListing, type ListOptions } from "./list.ts";
export { parseDuration } from "./duration.ts";
export { KeysError, UsageError } from "./errors.ts";
export type { PlanName } from "../lib/api-key-format.ts";
