import type { KeyClaims } from "../../lib/api-key-format.ts";
import type { Clock } from "../../lib/clock.ts";
import { keyRecordJson, keyState, type KeyRecord, type KeyState, type Page } from "../../lib/key-record.ts";
import type { PlanName } from "../../lib/api-key-format.ts";
import { signKey } from "../issue.ts";
import { RegistryConflictError, type IdempotentResult, type KeyRegistry, type NewEvent } from "../registry/store.ts";
import { IdempotencyKeyReusedError, KeyConflictError, KeyNotFoundError, KeyValidationError } from "./errors.ts";
import { changedFields, createdChanges, graceUntilJson, newKeyRecord, patchedRecord, type CreateKeyInput, type KeyPatch } from "./record.ts";

export { IdempotencyKeyReusedError, KeyConflictError, KeyNotFoundError, KeyValidationError, type FieldProblem } from "./errors.ts";
export type { CreateKeyInput, KeyPatch } from "./record.ts";

/**
 * What can be done to keys, whoever asks (the admin API with the admin token's name as actor, the
 * command line as `cli`): validated, signed with KEYS_DIR's active pair, and written to the
 * registry with exactly one event per change (none for a change that changes nothing).
 */
export interface KeyOperationsDeps {
  registry: KeyRegistry;
  /** The signing pairs. */
  keysDir: string;
  clock: Clock;
}

/** How long a create's answer is remembered under its Idempotency-Key. */
export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;
export const DEFAULT_GRACE_SECONDS = 86_400;
export const MAX_GRACE_SECONDS = 30 * 86_400;

/** A create under an Idempotency-Key of an admin token. */
export interface IdempotencyRequest {
  tokenId: string;
  key: string;
  /** SHA-256 of the request body. */
  requestHash: string;
}

export interface CreatedKey {
  record: KeyRecord;
  /** The token, shown once. */
  token: string;
  /** The answer's JSON body (the record's wire form and `key`) as first given: a replay gives it again. */
  body: string;
  /** The Idempotency-Key's first answer, given again (nothing created now). */
  replayed: boolean;
}

export interface KeyListFilter {
  ownerId?: string;
  plan?: PlanName;
  state?: KeyState;
}

export interface KeyOperations {
  /** Throws KeyValidationError, IdempotencyKeyReusedError, KeysError (no signing pair). */
  create(input: CreateKeyInput, actor: string, idempotency?: IdempotencyRequest): Promise<CreatedKey>;
  /** Throws KeyNotFoundError. */
  get(id: string): Promise<KeyRecord>;
  list(filter: KeyListFilter, limit: number, cursor?: string): Promise<Page<KeyRecord>>;
  /** Throws KeyNotFoundError, KeyConflictError (revoked), KeyValidationError; RegistryConflictError when other writers kept changing the key (10 tries). */
  update(id: string, patch: KeyPatch, actor: string): Promise<KeyRecord>;
  /** A new token of the same key; older ones work `graceSeconds` more. Throws as update, and KeyConflictError when expired. */
  roll(id: string, graceSeconds: number | undefined, actor: string): Promise<{ record: KeyRecord; token: string }>;
  /** Revoking a revoked key changes nothing (same revokedAt). Throws KeyNotFoundError. */
  revoke(id: string, actor: string): Promise<KeyRecord>;
}

const toSeconds = (ms: number) => Math.floor(ms / 1000);

/** A change computed from a record another writer changed meanwhile is computed again, this many times at most. */
const CHANGE_ATTEMPTS = 10;

/** Runs `change` (read, compute, compare-and-set write) again while another writer got there first. */
async function untilApplied<T>(change: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await change();
    } catch (err) {
      if (!(err instanceof RegistryConflictError) || attempt === CHANGE_ATTEMPTS) throw err;
    }
  }
}

export function createKeyOperations({ registry, keysDir, clock }: KeyOperationsDeps): KeyOperations {
  const event = (at: number, actor: string, type: NewEvent["type"], keyId: string, changes: Record<string, unknown>): NewEvent => ({
    at,
    actor,
    type,
    keyId,
    changes,
  });

  async function get(id: string): Promise<KeyRecord> {
    const record = await registry.getKey(id);
    if (!record) throw new KeyNotFoundError(id);
    return record;
  }

  async function live(id: string): Promise<KeyRecord> {
    const record = await get(id);
    if (record.revokedAt !== null) throw new KeyConflictError(`${id} is revoked; create a new key instead`);
    return record;
  }

  /** Signs the newest token of `record` (its plan in force, its generation, its expiry). */
  function sign(record: KeyRecord, now: number): { token: string; kid: string } {
    const claims: KeyClaims = { sub: record.id, plan: record.plan };
    if (record.plan === "enterprise") claims.lim = { m: record.limits.perMinute, d: record.limits.perDay };
    if (record.generation > 0) claims.gen = record.generation;
    return signKey(keysDir, claims, toSeconds(now), record.expiresAt === null ? null : toSeconds(record.expiresAt));
  }

  async function replay(found: IdempotentResult, request: IdempotencyRequest): Promise<CreatedKey> {
    if (found.requestHash !== request.requestHash) throw new IdempotencyKeyReusedError();
    const answer = JSON.parse(found.body) as { id: string; key: string };
    return { record: await get(answer.id), token: answer.key, body: found.body, replayed: true };
  }

  return {
    async create(input, actor, idempotency) {
      const now = clock();
      if (idempotency) {
        const found = await registry.findIdempotent(idempotency.tokenId, idempotency.key, now);
        if (found) return replay(found, idempotency);
      }
      const record = newKeyRecord(input, now);
      const { token, kid } = sign(record, now);
      record.kid = kid;
      const body = JSON.stringify({ ...keyRecordJson(record), key: token });
      const claim = idempotency && {
        tokenId: idempotency.tokenId,
        key: idempotency.key,
        expiresAt: now + IDEMPOTENCY_TTL_MS,
        result: { requestHash: idempotency.requestHash, status: 201, body },
      };
      try {
        await registry.createKey(record, event(now, actor, "key.created", record.id, createdChanges(record)), claim);
      } catch (err) {
        // A concurrent create with the same Idempotency-Key won: answer as it did.
        const found = idempotency && err instanceof RegistryConflictError && (await registry.findIdempotent(idempotency.tokenId, idempotency.key, now));
        if (found) return replay(found, idempotency);
        throw err;
      }
      return { record, token, body, replayed: false };
    },

    get,

    list(filter, limit, cursor) {
      return registry.listKeys({ ...filter, now: clock() }, limit, cursor);
    },

    update(id, patch, actor) {
      return untilApplied(async () => {
        const now = clock();
        const current = await live(id);
        const next = patchedRecord(current, patch, now);
        const changes = changedFields(current, next);
        if (Object.keys(changes).length === 0) return current;
        await registry.updateKey(next, event(now, actor, "key.updated", id, changes), current);
        return next;
      });
    },

    async roll(id, graceSeconds = DEFAULT_GRACE_SECONDS, actor) {
      if (!Number.isSafeInteger(graceSeconds) || graceSeconds < 0 || graceSeconds > MAX_GRACE_SECONDS) {
        throw new KeyValidationError([{ field: "graceSeconds", message: `must be a whole number of seconds from 0 to ${MAX_GRACE_SECONDS} (30 days)` }]);
      }
      // Two rolls at once never hand out one generation twice: the second computes again from the first's.
      return untilApplied(async () => {
        const now = clock();
        const current = await live(id);
        if (keyState(current, now) === "expired") throw new KeyConflictError(`${id} has expired; create a new key instead`);
        // Grace periods already over say nothing an absent one does not (an older generation without one is refused).
        const graceUntil = Object.fromEntries(Object.entries(current.graceUntil).filter(([, until]) => until > now));
        graceUntil[String(current.generation)] = now + graceSeconds * 1000;
        const rolled: KeyRecord = { ...current, generation: current.generation + 1, graceUntil };
        const { token, kid } = sign(rolled, now);
        rolled.kid = kid;
        await registry.updateKey(rolled, event(now, actor, "key.rolled", id, { ...changedFields(current, rolled), graceUntil: graceUntilJson(graceUntil) }), current);
        return { record: rolled, token };
      });
    },

    revoke(id, actor) {
      return untilApplied(async () => {
        const now = clock();
        const current = await get(id);
        if (current.revokedAt !== null) return current;
        const revoked = { ...current, revokedAt: now };
        await registry.updateKey(revoked, event(now, actor, "key.revoked", id, changedFields(current, revoked)), current);
        return revoked;
      });
    },
  };
}
