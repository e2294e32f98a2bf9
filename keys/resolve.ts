import jwt from "jsonwebtoken";
import { AuthError, loadPublicKeys, verifyTokenSignature } from "../lib/api-key-format.ts";
import type { KeyRecord } from "../lib/key-record.ts";
import { KeysError } from "./errors.ts";
import type { KeyRegistry } from "./registry/store.ts";

/**
 * The registry's record of a key the operator names by its id or by one of its tokens. A token
 * must verify with the public keys in KEYS_DIR; one whose signing pair was retired is accepted
 * when the registry knows its id. Throws KeysError naming what is wrong.
 */
export async function findKey(registry: KeyRegistry, keysDir: string, keyOrId: string, nowSeconds: number): Promise<KeyRecord> {
  const text = keyOrId.trim();
  let id = text;
  if (text.includes(".")) {
    const keys = loadPublicKeys(keysDir);
    try {
      id = verifyTokenSignature(text, keys, nowSeconds).apiKey.keyId;
    } catch (err) {
      if (!(err instanceof AuthError)) throw err;
      const decoded = jwt.decode(text, { complete: true });
      const kid = decoded?.header.kid;
      const sub = typeof decoded?.payload === "object" ? decoded.payload.sub : undefined;
      if (!sub || !kid || keys.has(kid)) throw new KeysError(`not a valid key issued with the signing keys in ${keysDir}`);
      id = sub;
    }
  }
  const record = await registry.getKey(id);
  if (!record) throw new KeysError(`unknown key id ${JSON.stringify(id)}: not in the key registry`);
  return record;
}

/** Every key in the registry, oldest first. */
export async function allKeys(registry: KeyRegistry, now: number): Promise<KeyRecord[]> {
  const keys: KeyRecord[] = [];
  let cursor: string | undefined;
  do {
    const page = await registry.listKeys({ now }, 500, cursor);
    keys.push(...page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return keys;
}
