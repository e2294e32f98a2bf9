import { chmodSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import type { Clock } from "../../lib/clock.ts";
import { writeFileAtomic } from "../../lib/write-file-atomic.ts";
import { RegistryConflictError, type KeyRegistry } from "../registry/store.ts";
import { ADMIN_TOKEN_PATTERN, generateAdminToken, hashAdminToken, newAdminTokenId } from "./tokens.ts";

export const BOOTSTRAP_TOKEN_NAME = "bootstrap";

export interface Bootstrapped {
  /** The bootstrap token: KEYS_ADMIN_TOKEN, or the one saved in `file`. */
  token: string;
  /** Where it was saved, when generated (undefined with KEYS_ADMIN_TOKEN). */
  file?: string;
}

function readSaved(file: string): string | undefined {
  try {
    const token = readFileSync(file, "utf8").trim();
    return ADMIN_TOKEN_PATTERN.test(token) ? token : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Makes sure the registry knows the bootstrap admin token (name `bootstrap`, scope `admin`):
 * KEYS_ADMIN_TOKEN when set, else the token saved in `file` (mode 0600), generated there at
 * first start. Idempotent, and safe when several replicas start at once on one database: a
 * replica that loses the race to create it finds the winner's hash.
 */
export async function ensureBootstrapToken(
  registry: KeyRegistry,
  opts: { configured: string | undefined; file: string; clock: Clock },
): Promise<Bootstrapped> {
  let token = opts.configured;
  let file: string | undefined;
  if (token === undefined) {
    file = opts.file;
    token = readSaved(file);
    if (token === undefined) {
      token = generateAdminToken();
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileAtomic(file, `${token}\n`, 0o600);
      chmodSync(file, 0o600);
    }
  }
  const hash = hashAdminToken(token);
  // A changed KEYS_ADMIN_TOKEN finds the name taken by the previous one (still valid until revoked).
  for (const name of [BOOTSTRAP_TOKEN_NAME, `${BOOTSTRAP_TOKEN_NAME}-${hash.slice(0, 8)}`]) {
    if (await registry.findAdminTokenByHash(hash)) break;
    const now = opts.clock();
    const record = { id: newAdminTokenId(), name, scopes: ["admin"], hash, createdAt: now, revokedAt: null };
    try {
      await registry.createAdminToken(record, {
        at: now,
        actor: "key-service",
        type: "admin_token.created",
        keyId: null,
        changes: { id: record.id, name, scopes: record.scopes },
      });
      break;
    } catch (err) {
      // Another replica created it between our look-up and our write, or the name is taken: look again.
      if (!(err instanceof RegistryConflictError)) throw err;
    }
  }
  if (!(await registry.findAdminTokenByHash(hash))) throw new Error("the bootstrap admin token could not be stored");
  return { token, ...(file && { file }) };
}
