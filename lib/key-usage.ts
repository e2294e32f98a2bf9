/**
 * KEYS_DIR/usage.json: what a gateway without Redis publishes of its limiter's state for API keys
 * (about once a second, when something changed), so `keys usage` and `keys list` can read it
 * without a network route. With Redis the keys tooling reads the limiter's own keys instead.
 *
 *   { "at": 1790000000123, "keys": { "<keyId>": {
 *       "windows": { "60": [[bucketIndex, count], ...], "86400": [...] },
 *       "bannedUntil": 0, "lastUsedAt": 1790000000100 } } }
 * Times are Unix milliseconds; buckets as lib/window-buckets.ts defines them.
 */
import path from "node:path";
import { z } from "zod";
import { readOptionalFile } from "./optional-file.ts";

const bucketsSchema = z.array(z.tuple([z.number().int(), z.number().int().nonnegative()]));

const usageFileSchema = z.object({
  at: z.number().int(),
  keys: z
    .record(
      z.string(),
      z.object({
        windows: z.record(z.string().regex(/^\d+$/), bucketsSchema),
        bannedUntil: z.number().int(),
        lastUsedAt: z.number().int().nullable(),
      }),
    )
    .transform((keys) => Object.assign(Object.create(null) as typeof keys, keys)),
});
export type UsageFile = z.infer<typeof usageFileSchema>;
export type PublishedUsage = UsageFile["keys"][string];

export const usageFilePath = (keysDir: string): string => path.join(keysDir, "usage.json");

/** Reads usage.json; undefined when no gateway published one. Throws on a corrupt file. */
export function readUsageFile(keysDir: string): UsageFile | undefined {
  const text = readOptionalFile(usageFilePath(keysDir));
  return text === undefined ? undefined : usageFileSchema.parse(JSON.parse(text));
}
