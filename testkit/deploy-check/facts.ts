/**
 * What deploy/ is checked against: what the code says about each process (the file its npm
 * script runs, the variables it reads, its ports), and the Check shape every family of checks has.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { GATEWAY_ENV } from "../../gateway/config.ts";
import { KEY_SERVICE_ENV } from "../../keys/service-config.ts";
import { DOCS_PATH } from "../../lib/http/docs.ts";
import { PORTAL_PATH } from "../../gateway/portal/routes.ts";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));
export const DEPLOY = path.join(ROOT, "deploy");
export const K8S = path.join(DEPLOY, "k8s");
export const read = (rel: string) => readFileSync(path.join(ROOT, rel), "utf8");
/** What the Ingress routes to the gateway: the API, its reference page (GET /docs, which loads /v1/openapi.json) and the key holder's portal. */
export const PUBLIC_PATHS = ["/v1", DOCS_PATH, PORTAL_PATH];

// ---------------------------------------------------------------------------------------------
// What the code says
// ---------------------------------------------------------------------------------------------

type ProcessId = "gateway" | "pet-service" | "key-service";

export interface ProcessFacts {
  id: ProcessId;
  /** The file its npm start script runs, e.g. gateway/main.ts. */
  entry: string;
  /** Every environment variable the process reads. */
  envNames: ReadonlySet<string>;
  /** The variable holding its main listening port, and that port's default. */
  portVar: string;
  defaultPort: number;
  /** The variable of the port that serves GET /metrics (may be unset for the pet service). */
  metricsPortVar: string;
  /** Throws (a ConfigError naming the variable) when the process would refuse this environment. */
  validate(env: Record<string, string>): void;
}

/** `node gateway/main.ts` → `gateway/main.ts` (Node runs the TypeScript itself). */
function scriptEntry(script: string): string {
  const scripts = (JSON.parse(read("package.json")) as { scripts: Record<string, string> }).scripts;
  const m = /^node(?:\s+--\S+)*\s+(\S+\.ts)$/.exec(scripts[script] ?? "");
  if (!m) throw new Error(`package.json script ${script} does not run one .ts file with node: ${scripts[script]}`);
  return m[1]!;
}

/** Variables read outside the schemas by shared code (lib/logger.ts reads LOG_LEVEL). */
function sharedEnvNames(): string[] {
  const names: string[] = [];
  for (const file of readdirSync(path.join(ROOT, "lib")).filter((f) => f.endsWith(".ts"))) {
    for (const m of read(`lib/${file}`).matchAll(/process\.env\.([A-Z_][A-Z0-9_]*)|process\.env\[["']([A-Z_][A-Z0-9_]*)["']\]/g)) {
      names.push((m[1] ?? m[2])!);
    }
  }
  return names;
}

interface ZodObjectLike {
  shape: Record<string, unknown>;
  parse(input: unknown): Record<string, unknown>;
}
const isZodObject = (v: unknown): v is ZodObjectLike =>
  typeof v === "object" && v !== null && typeof (v as ZodObjectLike).shape === "object" && typeof (v as ZodObjectLike).parse === "function";

export const gatewayFacts: ProcessFacts = {
  id: "gateway",
  entry: scriptEntry("start:gateway"),
  envNames: new Set([...Object.keys(GATEWAY_ENV.shape), ...sharedEnvNames()]),
  portVar: "GATEWAY_PORT",
  defaultPort: GATEWAY_ENV.parse({}).GATEWAY_PORT,
  metricsPortVar: "GATEWAY_PORT",
  validate: (env) => {
    const r = GATEWAY_ENV.safeParse(env);
    if (!r.success) throw new Error(`${String(r.error.issues[0]!.path[0])}: ${r.error.issues[0]!.message}`);
  },
};

/**
 * The pet service's variables: from an exported zod object schema when pet-service/config.ts
 * exports one, otherwise from the file's text (the upper-case keys of its schema object and any
 * process.env.X). Values are validated with its exported load function either way.
 */
async function loadPetServiceFacts(): Promise<ProcessFacts> {
  const file = path.join(ROOT, "pet-service/config.ts");
  const mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  const text = readFileSync(file, "utf8");
  const schema = Object.values(mod).find((v): v is ZodObjectLike => isZodObject(v) && "PET_SERVICE_PORT" in v.shape);
  let names: string[];
  let defaultPort: number;
  if (schema) {
    names = Object.keys(schema.shape);
    defaultPort = Number(schema.parse({}).PET_SERVICE_PORT);
  } else {
    names = [
      ...[...text.matchAll(/^\s*([A-Z][A-Z0-9_]*)\s*:/gm)].map((m) => m[1]!),
      ...[...text.matchAll(/process\.env\.([A-Z_][A-Z0-9_]*)/g)].map((m) => m[1]!),
    ];
    defaultPort = Number(/\bPET_SERVICE_PORT\s*:\s*port\(\s*([0-9_]+)\s*\)/.exec(text)?.[1]?.replaceAll("_", ""));
  }
  if (!names.includes("PET_SERVICE_PORT") || !Number.isInteger(defaultPort)) {
    throw new Error("cannot read PET_SERVICE_PORT and its default from pet-service/config.ts");
  }
  const load = Object.entries(mod).find(([name, v]) => /^load\w*Config$/.test(name) && typeof v === "function")?.[1] as
    | ((env: NodeJS.ProcessEnv) => unknown)
    | undefined;
  if (!load && !schema) throw new Error("pet-service/config.ts exports neither a schema nor a load*Config function");
  return {
    id: "pet-service",
    entry: scriptEntry("start:pet-service"),
    envNames: new Set([...names, ...sharedEnvNames()]),
    portVar: "PET_SERVICE_PORT",
    defaultPort,
    metricsPortVar: "METRICS_PORT",
    validate: (env) => void (load ? load(env) : schema!.parse(env)),
  };
}

export const keyServiceFacts: ProcessFacts = {
  id: "key-service",
  entry: scriptEntry("start:keys"),
  envNames: new Set([...Object.keys(KEY_SERVICE_ENV.shape), ...sharedEnvNames()]),
  portVar: "KEYS_PORT",
  defaultPort: KEY_SERVICE_ENV.parse({}).KEYS_PORT,
  // The admin API's port serves GET /metrics too.
  metricsPortVar: "KEYS_PORT",
  validate: (env) => {
    const r = KEY_SERVICE_ENV.safeParse(env);
    if (!r.success) throw new Error(`${String(r.error.issues[0]!.path[0])}: ${r.error.issues[0]!.message}`);
  },
};

export const petFacts = await loadPetServiceFacts();
export const FACTS: Record<ProcessId, ProcessFacts> = { gateway: gatewayFacts, "pet-service": petFacts, "key-service": keyServiceFacts };

/** The port a process listens on given its environment. */
export const effectivePort = (facts: ProcessFacts, env: Record<string, string>) =>
  env[facts.portVar] !== undefined ? Number(env[facts.portVar]) : facts.defaultPort;

export const PEM_BLOCK = /-----BEGIN [A-Z ]+-----/;

/** A check of one family: the problems it finds (none: []). */
export type Check<T> = (input: T) => string[];
