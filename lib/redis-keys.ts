/**
 * Redis key names shared by the gateway's limiter and the keys tooling. Every key of one
 * subject carries the same hash tag `{subject}`, so the limiter's single Lua script touches one
 * slot and runs on Redis Cluster.
 */
import calculateSlot from "cluster-key-slot";

export type SubjectPart = "m" | "d" | "ban" | "strikes" | "revoked" | "offences" | `w${number}`;

export const subjectForKey = (keyId: string): string => `key:${keyId}`;
export const subjectForAddress = (address: string): string => `ip:${address}`;
export const redisKey = (subject: string, part: SubjectPart): string => `rl:{${subject}}:${part}`;

/** The Redis Cluster slot holding every key of `subject` (they share its hash tag). */
export const subjectSlot = (subject: string): number => calculateSlot(redisKey(subject, "m"));

/** The sorted set of live gateway replicas (member: replica id, score: last heartbeat, Redis ms). */
export const PRESENCE_KEY = "rl:{gateways}:live";
