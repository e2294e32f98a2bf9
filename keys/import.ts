import { keyChangesFilePath, planOverride, readKeyChanges, type KeyChange, type KeyChanges } from "../lib/key-changes.ts";
import { DEFAULT_SCOPES, type KeyEvent, type KeyRecord } from "../lib/key-record.ts";
import { limitsFor } from "../lib/plans.ts";
import { KeysError } from "./errors.ts";
import { changedFields, createdChanges, graceUntilJson } from "./operations/record.ts";
import { readIssued, readRevoked, type IssuedKey } from "./registry.ts";
import type { KeyRegistry, NewEvent } from "./registry/store.ts";

export interface ImportResult {
  /** Keys new to the registry. */
  created: number;
  /** Keys already there to which the files added a revocation, a roll or a plan change. */
  updated: number;
  unchanged: number;
  /** Revoked ids that issued.jsonl does not list (nothing to make a record of). */
  skipped: number;
}

const ms = (seconds: number) => seconds * 1000;

function readChanges(dir: string): KeyChanges {
  try {
    return readKeyChanges(dir);
  } catch {
    throw new KeysError(`${keyChangesFilePath(dir)} is not a valid key change record; fix or remove it`);
  }
}

/** The record the files describe: same id, signing pair and generation, so its tokens keep verifying. */
function recordOf(issued: IssuedKey, change: KeyChange | undefined, revokedAt: number | null): KeyRecord {
  const inForce = planOverride(change) ?? issued;
  return {
    id: issued.keyId,
    name: issued.name,
    ownerId: null,
    metadata: {},
    plan: inForce.plan,
    limits: { ...limitsFor(inForce) },
    scopes: [...DEFAULT_SCOPES],
    allowedCidrs: [],
    createdAt: ms(issued.createdAt),
    expiresAt: issued.expiresAt === null ? null : ms(issued.expiresAt),
    revokedAt,
    generation: change?.generation ?? 0,
    graceUntil: Object.fromEntries(Object.entries(change?.graceUntil ?? {}).map(([generation, until]) => [generation, ms(until)])),
    kid: issued.kid,
    lastUsedAt: null,
  };
}

/** The time of each key's newest event: a file change older than it was imported (or overtaken) already. */
async function lastEventAt(registry: KeyRegistry): Promise<Map<string, number>> {
  const last = new Map<string, number>();
  for (let after = 0; ; ) {
    const events: KeyEvent[] = await registry.events(after, 1000);
    for (const e of events) if (e.keyId !== null) last.set(e.keyId, e.at);
    if (events.length < 1000) return last;
    after = events.at(-1)!.seq;
  }
}

/**
 * Brings a KEYS_DIR record of the file era (issued.jsonl, revoked.json, key-changes.json) into the
 * registry, idempotently, with actor `cli`: a key not in the registry is created as the files
 * describe it; a key already there is left alone except that a revocation, a later roll or a plan
 * change made in the files after its last event is applied, once. Running it again changes nothing.
 */
export async function importKeysDir(registry: KeyRegistry, fromDir: string, now: number): Promise<ImportResult> {
  const issued = readIssued(fromDir);
  const revoked = readRevoked(fromDir).revoked;
  const changes = readChanges(fromDir).keys;
  const last = await lastEventAt(registry);
  const result: ImportResult = { created: 0, updated: 0, unchanged: 0, skipped: 0 };
  const event = (type: NewEvent["type"], keyId: string, changes: Record<string, unknown>): NewEvent => ({ at: now, actor: "cli", type, keyId, changes });
  const seen = new Set<string>();
  for (const key of issued) {
    if (seen.has(key.keyId)) continue;
    seen.add(key.keyId);
    const change = changes[key.keyId];
    const revokedEntry = revoked[key.keyId];
    const fromFiles = recordOf(key, change, revokedEntry ? ms(revokedEntry.revokedAt) : null);
    const existing = await registry.getKey(key.keyId);
    if (!existing) {
      await registry.createKey(fromFiles, event("key.created", key.keyId, createdChanges(fromFiles)));
      result.created++;
      continue;
    }
    let current = existing;
    const since = last.get(key.keyId) ?? 0;
    const apply = async (next: KeyRecord, type: NewEvent["type"], extra: Record<string, unknown> = {}) => {
      await registry.updateKey(next, event(type, key.keyId, { ...changedFields(current, next), ...extra }), current);
      current = next;
    };
    if (change?.planChangedAt !== undefined && ms(change.planChangedAt) > since && planOverride(change)) {
      const next = { ...current, plan: fromFiles.plan, limits: fromFiles.limits };
      if (Object.keys(changedFields(current, next)).length > 0) await apply(next, "key.updated");
    }
    if (fromFiles.generation > current.generation) {
      const graceUntil = { ...current.graceUntil, ...fromFiles.graceUntil };
      await apply({ ...current, generation: fromFiles.generation, graceUntil }, "key.rolled", { graceUntil: graceUntilJson(graceUntil) });
    }
    if (fromFiles.revokedAt !== null && current.revokedAt === null) await apply({ ...current, revokedAt: fromFiles.revokedAt }, "key.revoked");
    if (current === existing) result.unchanged++;
    else result.updated++;
  }
  result.skipped = Object.keys(revoked).filter((id) => !seen.has(id)).length;
  return result;
}
