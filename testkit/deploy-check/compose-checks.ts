/** Checks of deploy/compose.yaml against the code; each returns the problems it finds. */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { parseAllDocuments } from "yaml";
import { GATEWAY_ENV, shutdownDeadlineMs } from "../../gateway/config.ts";
import { KEY_SERVICE_ENV, shutdownDeadlineMs as keyServiceDeadlineMs } from "../../keys/service-config.ts";
import { isPostgresUrl } from "../../pet-service/store/pets-db-url.ts";
import { PET_SERVICE_NAME } from "../../proto/load.ts";
import { ROOT, DEPLOY, type ProcessFacts, gatewayFacts, petFacts, keyServiceFacts, FACTS, effectivePort, type Check } from "./facts.ts";

// ---------------------------------------------------------------------------------------------
// compose
// ---------------------------------------------------------------------------------------------

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string };
  command?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  volumes?: (string | { type: string; source?: string; target: string; read_only?: boolean })[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] | string };
  deploy?: { replicas?: number };
  read_only?: boolean;
  stop_grace_period?: string;
}
export interface Compose {
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
}

/**
 * The operator's value of a variable compose.yaml requires: `example-name`, or for an admin token
 * (`*_TOKEN`) one of the right shape (pskadm_ and 43 base64url characters), made from its name.
 */
export const operatorValue = (name: string): string =>
  name.endsWith("_TOKEN") ? `pskadm_${createHash("sha256").update(name).digest("base64url")}` : `example-${name.toLowerCase().replaceAll("_", "-")}`;

/**
 * compose.yaml as `docker compose config` sees it: `${NAME}` and `${NAME:?message}` become
 * the operator's value (operatorValue), `${NAME:-default}` its default (left unset).
 */
export function loadCompose(): Compose {
  const text = readFileSync(path.join(DEPLOY, "compose.yaml"), "utf8")
    .replace(/\$\{[A-Z_][A-Z0-9_]*:?-([^}]*)\}/g, "$1")
    .replace(/\$\{([A-Z_][A-Z0-9_]*)(?::?\?[^}]*)?\}/g, (_, name: string) => operatorValue(name));
  return parseAllDocuments(text, { merge: true })[0]!.toJS() as Compose;
}

/** A compose health check's command line: a ["CMD", ...] list's words, or the string (CMD-SHELL). */
const healthCommand = (test: string[] | string) => (typeof test === "string" ? test : test.slice(test[0] === "CMD" ? 1 : 0).join(" "));

const composeServicesOf = (c: Compose, f: ProcessFacts) =>
  Object.entries(c.services).filter(([, s]) => JSON.stringify(s.command) === JSON.stringify(["node", f.entry]));

export const composeChecks: Record<string, Check<Compose>> = {
  "compose runs postgres, redis, a pet-service with 2+ replicas, one key service and two gateways from the deploy/Dockerfile image": (c) => {
    const problems: string[] = [];
    if (!c.services.redis?.image?.startsWith("redis:")) problems.push("no redis service");
    if (!c.services.postgres?.image?.startsWith("postgres:")) problems.push("no postgres service");
    const pets = composeServicesOf(c, petFacts);
    const gws = composeServicesOf(c, gatewayFacts);
    const keys = composeServicesOf(c, keyServiceFacts);
    if (pets.length !== 1 || pets[0]![0] !== "pet-service") problems.push(`want one pet-service service (scaled with deploy.replicas), got ${pets.map(([n]) => n)}`);
    if ((pets[0]?.[1].deploy?.replicas ?? 1) < 2) problems.push(`pet-service: deploy.replicas ${pets[0]?.[1].deploy?.replicas} (want 2 or more)`);
    if (gws.length !== 2) problems.push(`want two gateway services, got ${gws.map(([n]) => n)}`);
    if (keys.length !== 1 || (keys[0]![1].deploy?.replicas ?? 1) !== 1) problems.push(`want one key-service service with one replica (its SQLite registry has one writer), got ${keys.map(([n]) => n)}`);
    for (const [name, s] of [...pets, ...gws, ...keys]) {
      if (!s.build || path.resolve(DEPLOY, s.build.context) !== path.resolve(ROOT) || s.build.dockerfile !== "deploy/Dockerfile") {
        problems.push(`${name}: build must be context .. and dockerfile deploy/Dockerfile`);
      }
      if (s.image !== pets[0]?.[1].image) problems.push(`${name}: all processes share one image`);
      if (s.read_only !== true) problems.push(`${name}: read_only root filesystem`);
      if (!s.volumes?.some((v) => typeof v === "object" && v.type === "tmpfs" && v.target === "/tmp")) problems.push(`${name}: /tmp tmpfs`);
    }
    return problems;
  },

  "compose environments use only variables the processes read, with values they accept": (c) => {
    const problems: string[] = [];
    for (const f of Object.values(FACTS)) {
      for (const [name, s] of composeServicesOf(c, f)) {
        const env = s.environment ?? {};
        for (const v of Object.keys(env)) if (!f.envNames.has(v)) problems.push(`${name}: ${v} is not a variable the ${f.id} reads`);
        try {
          f.validate(env);
        } catch (err) {
          problems.push(`${name} refuses its environment: ${(err as Error).message}`);
        }
      }
    }
    return problems;
  },

  "compose ports, addresses and health checks agree with the processes": (c) => {
    const problems: string[] = [];
    const [petName, pet] = composeServicesOf(c, petFacts)[0] ?? ["?", undefined];
    const petEnv = pet?.environment ?? {};
    const petPort = effectivePort(petFacts, petEnv);
    if (petEnv.PET_SERVICE_HOST !== "0.0.0.0") problems.push("pet-service must listen on 0.0.0.0 in a container");
    const hc = pet?.healthcheck?.test ?? [];
    if (healthCommand(hc) !== `node deploy/grpc-health-check.mjs 127.0.0.1:${petPort} ${PET_SERVICE_NAME}`) {
      problems.push(`pet-service healthcheck ${JSON.stringify(hc)} (want the gRPC health check of ${PET_SERVICE_NAME} on ${petPort})`);
    }
    // Several replicas: the store is PostgreSQL, the compose service that keeps its data on a volume.
    const db = isPostgresUrl(petEnv.PETS_DB ?? "") ? new URL(petEnv.PETS_DB!) : undefined;
    if (db?.hostname !== "postgres" || (db.port || "5432") !== "5432") problems.push(`pet-service PETS_DB must be a postgres:// URL of the postgres service (got ${petEnv.PETS_DB})`);
    if (pet?.depends_on?.postgres?.condition !== "service_healthy") problems.push(`${petName}: depends_on postgres service_healthy`);
    if (!c.services.postgres?.healthcheck) problems.push("postgres has no healthcheck");
    if (!c.services.postgres?.volumes?.some((v) => (typeof v === "string" ? v.split(":")[1] : v.target) === "/var/lib/postgresql/data")) {
      problems.push("postgres keeps its data on a volume at /var/lib/postgresql/data");
    }
    if (pet?.ports?.length) problems.push(`${petName}: replicas cannot share a published host port`);
    const [keyName, keyService] = composeServicesOf(c, keyServiceFacts)[0] ?? [undefined, undefined];
    const keyServiceUrl = `http://${keyName}:${effectivePort(keyServiceFacts, keyService?.environment ?? {})}`;
    for (const [name, s] of composeServicesOf(c, gatewayFacts)) {
      const env = s.environment ?? {};
      const port = effectivePort(gatewayFacts, env);
      if (env.PET_SERVICE_ADDR !== `dns:///${petName}:${petPort}`) problems.push(`${name}: PET_SERVICE_ADDR=${env.PET_SERVICE_ADDR} (want dns:///${petName}:${petPort})`);
      const redis = env.REDIS_URL ? new URL(env.REDIS_URL) : undefined;
      if (redis?.hostname !== "redis" || (redis.port || "6379") !== "6379") problems.push(`${name}: REDIS_URL must point at the redis service`);
      if (!s.ports?.length || s.ports.some((p) => Number(p.split(":").at(-1)) !== port)) problems.push(`${name}: published ports ${JSON.stringify(s.ports)} must target ${port}`);
      const test = healthCommand(s.healthcheck?.test ?? []);
      if (!test.includes(`http://127.0.0.1:${port}/readyz`)) problems.push(`${name}: healthcheck must GET /readyz on ${port}`);
      for (const dep of [petName, "redis"]) {
        if (s.depends_on?.[dep]?.condition !== "service_healthy") problems.push(`${name}: depends_on ${dep} service_healthy`);
        if (!c.services[dep]?.healthcheck) problems.push(`${dep} has no healthcheck`);
      }
      // Keys come from the key service (JWKS and change feed) with a token of its own: no key material here.
      if (env.KEYS_URL !== keyServiceUrl) problems.push(`${name}: KEYS_URL=${env.KEYS_URL} (want ${keyServiceUrl})`);
      if (env.KEYS_SERVICE_TOKEN !== operatorValue("KEYS_SERVICE_TOKEN")) problems.push(`${name}: KEYS_SERVICE_TOKEN must be the operator's (\${KEYS_SERVICE_TOKEN:?...})`);
      if (env.KEYS_DIR !== undefined || (s.volumes ?? []).some((v) => typeof v === "string" || v.type !== "tmpfs")) problems.push(`${name}: a gateway mounts no keys (no KEYS_DIR, no volume but tmpfs)`);
      if (keyName && s.depends_on?.[keyName]?.condition !== "service_healthy") problems.push(`${name}: depends_on ${keyName} service_healthy`);
      const grace = Number(/^(\d+)s$/.exec(s.stop_grace_period ?? "")?.[1]) * 1000;
      const parsed = GATEWAY_ENV.safeParse(env);
      if (!parsed.success || !(grace > shutdownDeadlineMs(parsed.data))) {
        problems.push(`${name}: stop_grace_period must exceed the gateway's shutdown deadline (SHUTDOWN_DELAY_MS + SHUTDOWN_GRACE_MS + 2 s)`);
      }
    }
    const published = composeServicesOf(c, gatewayFacts).flatMap(([, s]) => s.ports ?? []);
    if (new Set(published.map((p) => p.split(":").slice(0, -1).join(":"))).size !== published.length) problems.push("gateways publish the same host port");
    return problems;
  },

  "the key service: its SQLite and signing pairs on a named volume, the admin token the operator's, the admin API on loopback only": (c) => {
    const [name, s] = composeServicesOf(c, keyServiceFacts)[0] ?? [];
    if (!name || !s) return ["no key-service service"];
    const problems: string[] = [];
    const env = s.environment ?? {};
    const port = effectivePort(keyServiceFacts, env);
    if (env.KEYS_HOST !== "0.0.0.0") problems.push(`${name}: KEYS_HOST must be 0.0.0.0 in a container (the gateways dial it)`);
    const namedVolume = (dir: string) =>
      (s.volumes ?? []).some((v) => {
        const [source, target] = typeof v === "string" ? v.split(":") : [v.source, v.target];
        return !!source && !source.includes("/") && !!c.volumes && source in c.volumes && (dir === target || dir.startsWith(`${target}/`));
      });
    const db = env.KEYS_DB ?? "";
    if (isPostgresUrl(db) || !path.posix.isAbsolute(db) || !namedVolume(path.posix.dirname(db))) problems.push(`${name}: KEYS_DB ${db} must be a SQLite file on a named volume`);
    if (!env.KEYS_DIR || !namedVolume(env.KEYS_DIR)) problems.push(`${name}: KEYS_DIR ${env.KEYS_DIR} (the signing pairs) must be on a named volume`);
    if (env.KEYS_ADMIN_TOKEN !== operatorValue("KEYS_ADMIN_TOKEN")) problems.push(`${name}: KEYS_ADMIN_TOKEN must be the operator's (\${KEYS_ADMIN_TOKEN:?...}), not generated inside the volume`);
    const redis = env.REDIS_URL ? new URL(env.REDIS_URL) : undefined;
    if (redis?.hostname !== "redis") problems.push(`${name}: REDIS_URL must point at the redis service (the key records the gateways' limiter reads)`);
    if (s.depends_on?.redis?.condition !== "service_healthy") problems.push(`${name}: depends_on redis service_healthy`);
    for (const p of s.ports ?? []) {
      if (!p.startsWith("127.0.0.1:") || Number(p.split(":").at(-1)) !== port) problems.push(`${name}: published port ${p} must be 127.0.0.1:<host port>:${port} (the admin API is never public)`);
    }
    if (!healthCommand(s.healthcheck?.test ?? []).includes(`http://127.0.0.1:${port}/readyz`)) problems.push(`${name}: healthcheck must GET /readyz on ${port}`);
    const grace = Number(/^(\d+)s$/.exec(s.stop_grace_period ?? "")?.[1]) * 1000;
    const parsed = KEY_SERVICE_ENV.safeParse(env);
    if (!parsed.success || !(grace > keyServiceDeadlineMs(parsed.data))) problems.push(`${name}: stop_grace_period must exceed its shutdown deadline (SHUTDOWN_GRACE_MS + 2 s)`);
    return problems;
  },
};
