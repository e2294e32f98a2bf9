/**
 * Redis key names shared by the gateway's limiter and the keys tooling. Every key of one
 * subject carries the same hash tag `{subject}`, so the limiter's single Lua script touches one
 * slot and runs on Redis Cluster.
 */
import calculateSlot from "cluster-key-slot";

/** `rec`: an API key's record (plan in force, rolls, last use), see sliding-window.lua. */
export type SubjectPart = "m" | "d" | "ban" | "strikes" | "revoked" | "offences" | "rec" | `w${number}`;

export const subjectForKey = (keyId: string): string => `key:${keyId}`;
export const subjectForAddress = (address: string): string => `ip:${address}`;
export const redisKey = (subject: string, part: SubjectPart): string => `rl:{${subject}}:${part}`;

/** The Redis Cluster slot holding every key of `subject` (they share its hash tag). */
export const subjectSlot = (subject: string): number => calculateSlot(redisKey(subject, "m"));

/**
 * A key's record in Redis lives this long after its last use or change: KEYS_DIR holds the
 * truth, which gateways read when Redis has none, and `keys sync` publishes it again.
 */
export const KEY_RECORD_TTL_SECONDS = 35 * 86_400;

/** The sorted set of live gateway replicas (member: replica id, score: last heartbeat, Redis ms). */
export const PRESENCE_KEY = "rl:{gateways}:live";
