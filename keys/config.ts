import { z } from "zod";
import { redisUrl } from "../lib/redis-client.ts";
import { parseEnv } from "../lib/config.ts";
import { defaultKeysDir } from "../lib/keys-dir.ts";

export const keysEnvSchema = z.object({
  /** Signing pairs, public keys, the issued-keys registry and the revocation list. */
  KEYS_DIR: z.string().default(defaultKeysDir),
  /** When set, `revoke` also sets the Redis revocation key every gateway replica checks. */
  REDIS_URL: redisUrl.optional(),
});

export type KeysConfig = Readonly<z.infer<typeof keysEnvSchema>>;

/** Throws ConfigError naming the variable. */
export const loadKeysConfig = (env: NodeJS.ProcessEnv = process.env): KeysConfig => parseEnv(keysEnvSchema, env);
