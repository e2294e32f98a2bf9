import { z } from "zod";
import { parseEnv, port } from "../lib/config.js";

const schema = z.object({
  /** Bind address: loopback by default; containers set 0.0.0.0 (or :: for IPv6). */
  PET_SERVICE_HOST: z
    .union([z.ipv4(), z.ipv6(), z.hostname()], { error: "must be an IP address or a host name" })
    .default("127.0.0.1"),
  PET_SERVICE_PORT: port(50051),
  /** SQLite file; it, its directory and the schema are created on first start. */
  PETS_DB: z.string().default("data/pets.sqlite"),
});

export interface PetServiceConfig {
  host: string;
  port: number;
  dbPath: string;
}

/** Parsed once at start; a bad value throws a ConfigError naming the variable. */
export function loadConfig(env: NodeJS.ProcessEnv): Readonly<PetServiceConfig> {
  const parsed = parseEnv(schema, env);
  return Object.freeze({ host: parsed.PET_SERVICE_HOST, port: parsed.PET_SERVICE_PORT, dbPath: parsed.PETS_DB });
}
