import { z } from "zod";
import { redisUrl } from "../lib/redis-client.ts";
import { parseEnv } from "../lib/config.ts";
import { defaultKeysDir } from "../lib/keys-dir.ts";
import { isOtherUrl } from "../pet-service/store/pets-db-url.ts";

export const DEFAULT_KEYS_DB = "data/keys.sqlite";

/** KEYS_DB: the key registry, a SQLite file path or a postgres:// URL (keys/registry/open.ts). */
export const keysDb = z
  .string()
  .min(1)
  .refine((v) => !isOtherUrl(v), "must be a SQLite file path or a postgres:// (postgresql://) URL")
  .default(DEFAULT_KEYS_DB);

/** The command line's environment (`npm run keys`). */
export const keysEnvSchema = z.object({
  /** The signing key pairs (and, from before the registry, the files `keys import` reads). */
  KEYS_DIR: z.string().default(defaultKeysDir),
  /** The key registry: a SQLite file path (default data/keys.sqlite) or a postgres:// URL. */
  KEYS_DB: keysDb,
  /** When set, revoke, set-plan and roll also publish the key's record to Redis; sync needs it. */
  REDIS_URL: redisUrl.optional(),
});

export type KeysConfig = Readonly<z.infer<typeof keysEnvSchema>>;

/** Throws ConfigError naming the variable. */
export const loadKeysConfig = (env: NodeJS.ProcessEnv = process.env): KeysConfig => parseEnv(keysEnvSchema, env);
