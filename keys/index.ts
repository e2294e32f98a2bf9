/** What other parts of the project (npm start, test helpers) use of the keys tooling. */
export { ensureKeyPair, rotateKeyPair, retireKeyPair, activeKid, listKeyPairs } from "./key-pairs.ts";
export { issueKey, type IssueOptions } from "./issue.ts";
export { revokeKey, type RevokeOptions, type RevokeResult } from "./revoke.ts";
export { listKeys, type KeyListing } from "./list.ts";
export { parseDuration } from "./duration.ts";
export { KeysError, UsageError } from "./errors.ts";
