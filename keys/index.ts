/** What other parts of the project (npm start, test helpers) use of the keys tooling. */
export { ensureKeyPair, rotateKeyPair, retireKeyPair, activeKid, listKeyPairs } from "./key-pairs.js";
export { issueKey, type IssueOptions } from "./issue.js";
export { revokeKey, type RevokeOptions, type RevokeResult } from "./revoke.js";
export { listKeys, type KeyListing } from "./list.js";
export { parseDuration } from "./duration.js";
export { KeysError, UsageError } from "./errors.js";
