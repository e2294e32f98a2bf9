import { readOptionalFile } from "../lib/optional-file.ts";
import { z } from "zod";
import { issuedFilePath, PLAN_NAMES, readRevokedFile, revokedFilePath, type RevokedFile } from "../lib/api-key-format.ts";
import { KeysError } from "./errors.ts";

/**
 * The files that were the key registry before keys/registry/ (KEYS_DIR/issued.jsonl, one line per
 * issued key, never the token; revoked.json), read by `keys import` (import.ts).
 */
const issuedKeySchema = z.object({
  keyId: z.string(),
  name: z.string(),
  plan: z.enum(PLAN_NAMES),
  perMinute: z.number().int().optional(),
  perDay: z.number().int().optional(),
  /** The signing pair that signed it. */
  kid: z.string(),
  /** Unix seconds. */
  createdAt: z.number().int(),
  /** Unix seconds; null when the key never expires. */
  expiresAt: z.number().int().nullable(),
});
export type IssuedKey = z.infer<typeof issuedKeySchema>;

export function readIssued(keysDir: string): IssuedKey[] {
  const file = issuedFilePath(keysDir);
  const text = readOptionalFile(file) ?? "";
  return text
    .split("\n")
    .flatMap((line, i) => {
      if (line.trim() === "") return [];
      try {
        return [issuedKeySchema.parse(JSON.parse(line))];
      } catch {
        throw new KeysError(`${file}:${i + 1}: not an issued-key record`);
      }
    });
}

/** revoked.json as the gateways read it; a corrupt file is a KeysError naming it. */
export function readRevoked(keysDir: string): RevokedFile {
  try {
    return readRevokedFile(keysDir);
  } catch {
    throw new KeysError(`${revokedFilePath(keysDir)} is not a valid revocation list; fix or remove it`);
  }
}
