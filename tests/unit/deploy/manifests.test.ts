/**
 * deploy/ agrees with the code: the Kubernetes manifests, the compose file and the Dockerfile
 * are parsed and checked against what the processes actually read (variable names from their
 * configuration schemas, default ports, probe paths, entry points, key file layout).
 *
 * Every check returns a list of problems, so the second half of this file can prove that a
 * plausible mistake (a misspelt variable, a wrong port, a probe on the wrong path, a selector
 * that misses the pods...) is caught.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as grpc from "@grpc/grpc-js";
import { HealthImplementation, type ServingStatus } from "grpc-health-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml, parseAllDocuments } from "yaml";
import { KEY_ID_PATTERN, privateKeyDir, publicKeyPath, revokedFilePath } from "../../../lib/api-key-format.ts";
import { GATEWAY_ENV } from "../../../gateway/config.ts";
import { DOCS_PATH } from "../../../gateway/docs.ts";
import { parseRedisUrl } from "../../../lib/redis-client.ts";
import { isPostgresUrl } from "../../../pet-service/store/pets-db-url.ts";
import { PET_SERVICE_NAME } from "../../../proto/load.ts";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const DEPLOY = path.join(ROOT, "deploy");
const K8S = path.join(DEPLOY, "k8s");
const read = (rel: string) => readFileSync(path.join(ROOT, rel), "utf8");
/** What the Ingress routes to the gateway: the API and its reference page (GET /docs, which loads /v1/openapi.json). */
const PUBLIC_PATHS = ["/v1", DOCS_PATH];

// ---------------------------------------------------------------------------------------------
// What the code says
// ---------------------------------------------------------------------------------------------

type ProcessId = "gateway" | "pet-service";

interface ProcessFacts {
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

const gatewayFacts: ProcessFacts = {
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

const petFacts = await loadPetServiceFacts();
const FACTS: Record<ProcessId, ProcessFacts> = { gateway: gatewayFacts, "pet-service": petFacts };

/** The port a process listens on given its environment. */
const effectivePort = (facts: ProcessFacts, env: Record<string, string>) =>
  env[facts.portVar] !== undefined ? Number(env[facts.portVar]) : facts.defaultPort;

const PEM_BLOCK = /-----BEGIN [A-Z ]+-----/;

// ---------------------------------------------------------------------------------------------
// Kubernetes
// ---------------------------------------------------------------------------------------------

type Labels = Record<string, string>;
interface Probe {
  httpGet?: { path?: string; port?: number | string };
  grpc?: { port?: number | string; service?: string };
  tcpSocket?: { port?: number | string };
  exec?: { command?: string[] };
}
interface Container {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  ports?: { name?: string; containerPort: number }[];
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string }; configMapKeyRef?: { name: string; key: string } } }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean; subPath?: string }[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command?: string[] }; sleep?: { seconds: number } } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: { runAsNonRoot?: boolean; readOnlyRootFilesystem?: boolean; allowPrivilegeEscalation?: boolean };
}
interface Volume {
  name: string;
  emptyDir?: object;
  persistentVolumeClaim?: { claimName: string };
  secret?: { secretName: string; items?: { key: string; path: string }[] };
  configMap?: { name: string; items?: { key: string; path: string }[] };
  projected?: {
    sources: {
      secret?: { name: string; optional?: boolean; items?: { key: string; path: string }[] };
      configMap?: { name: string; optional?: boolean; items?: { key: string; path: string }[] };
    }[];
  };
}
interface PodSpec {
  containers: Container[];
  topologySpreadConstraints?: unknown[];
  volumes?: Volume[];
  enableServiceLinks?: boolean;
  terminationGracePeriodSeconds?: number;
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
}
interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Labels; annotations?: Record<string, string> };
  data?: Record<string, string>;
  stringData?: Record<string, string>;
  spec?: {
    replicas?: number;
    strategy?: { type?: string; rollingUpdate?: { maxUnavailable?: number | string; maxSurge?: number | string } };
    clusterIP?: string;
    selector?: Labels & { matchLabels?: Labels };
    template?: { metadata: { labels?: Labels; annotations?: Record<string, string> }; spec: PodSpec };
    ports?: { name?: string; port: number; targetPort?: number | string }[];
    scaleTargetRef?: { apiVersion: string; kind: string; name: string };
    minReplicas?: number;
    maxReplicas?: number;
    metrics?: { type: string; resource?: { name: string } }[];
    minAvailable?: number | string;
    maxUnavailable?: number | string;
    accessModes?: string[];
    rules?: { http?: { paths: { path: string; pathType: string; backend: { service: { name: string; port: { name?: string; number?: number } } } }[] } }[];
  };
  /** The file it came from, for messages. */
  file: string;
}

function parseYamlFile(file: string): unknown[] {
  const docs = parseAllDocuments(readFileSync(file, "utf8"), { merge: true });
  return docs.map((doc) => {
    if (doc.errors.length) throw new Error(`${path.relative(ROOT, file)}: ${doc.errors[0]!.message}`);
    return doc.toJS() as unknown;
  });
}

/** The two ways to deploy the pet service: kustomize overlays of deploy/k8s/base. */
const VARIANTS = ["postgres", "sqlite"] as const;
type Variant = (typeof VARIANTS)[number];

interface KustomizationFile {
  resources?: string[];
  patches?: { target: { kind: string; name: string }; patch: string }[];
  images?: { name: string; newName?: string; newTag?: string }[];
}

interface Manifests {
  variant: Variant;
  /** The rendered objects, and the Secrets of secrets.example.yaml (created by the operator). */
  objects: K8sObject[];
  /** Each kustomization directory used (relative to deploy/k8s), its resources and its YAML files. */
  dirs: { dir: string; resources: string[]; files: string[] }[];
}

/** A JSON pointer's steps (RFC 6901). */
const pointer = (p: string) => p.split("/").slice(1).map((s) => s.replaceAll("~1", "/").replaceAll("~0", "~"));

/** The add / replace / remove operations of a JSON patch (RFC 6902), as kustomize's patches use them. */
function applyJsonPatch(target: object, ops: { op: string; path: string; value?: unknown }[]): void {
  for (const { op, path: at, value } of ops) {
    const steps = pointer(at);
    const last = steps.pop()!;
    let parent = target as Record<string, unknown>;
    for (const step of steps) {
      parent = parent[step] as Record<string, unknown>;
      if (parent === undefined) throw new Error(`patch ${op} ${at}: no such path`);
    }
    if (Array.isArray(parent)) {
      const i = last === "-" ? parent.length : Number(last);
      if (op === "add") parent.splice(i, 0, structuredClone(value));
      else if (op === "replace") parent[i] = structuredClone(value);
      else if (op === "remove") parent.splice(i, 1);
      else throw new Error(`patch op ${op} is not supported here`);
    } else if (op === "add" || op === "replace") parent[last] = structuredClone(value);
    else if (op === "remove") delete parent[last];
    else throw new Error(`patch op ${op} is not supported here`);
  }
}

/**
 * What `kubectl kustomize <dir>` renders, for the features our kustomizations use: resources
 * (files and directories), JSON 6902 patches by kind and name, image tags. A test below compares
 * it with kubectl's own rendering where kubectl is installed.
 */
function renderKustomization(dir: string, dirs: Manifests["dirs"] = []): { objects: K8sObject[]; dirs: Manifests["dirs"] } {
  const k = parseYamlFile(path.join(dir, "kustomization.yaml"))[0] as KustomizationFile;
  const objects: K8sObject[] = [];
  dirs.push({
    dir: path.relative(K8S, dir),
    resources: k.resources ?? [],
    files: readdirSync(dir).filter((f) => /\.ya?ml$/.test(f) && f !== "kustomization.yaml").sort(),
  });
  for (const resource of k.resources ?? []) {
    const at = path.join(dir, resource);
    if (statSync(at).isDirectory()) objects.push(...renderKustomization(at, dirs).objects);
    else for (const doc of parseYamlFile(at)) if (doc) objects.push({ ...(doc as K8sObject), file: path.relative(K8S, at) });
  }
  for (const { target, patch } of k.patches ?? []) {
    const object = objects.find((o) => o.kind === target.kind && o.metadata.name === target.name);
    if (!object) throw new Error(`${path.relative(ROOT, dir)}: patch target ${target.kind}/${target.name} not found`);
    applyJsonPatch(object, parseYaml(patch) as { op: string; path: string; value?: unknown }[]);
  }
  for (const image of k.images ?? []) {
    for (const o of objects) {
      for (const c of o.spec?.template?.spec.containers ?? []) {
        const [name, tag] = (c.image ?? "").split(":");
        if (name === image.name) c.image = `${image.newName ?? name}:${image.newTag ?? tag}`;
      }
    }
  }
  return { objects, dirs };
}

function loadManifests(variant: Variant): Manifests {
  const { objects, dirs } = renderKustomization(path.join(K8S, variant));
  const secrets = parseYamlFile(path.join(K8S, "secrets.example.yaml"))
    .filter(Boolean)
    .map((doc) => ({ ...(doc as K8sObject), file: "secrets.example.yaml" }));
  return { variant, objects: [...objects, ...secrets], dirs };
}

const clone = <T>(v: T): T => structuredClone(v);
const subset = (selector: Labels | undefined, labels: Labels | undefined) =>
  !!selector && Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels?.[k] === v);

function find(m: Manifests, kind: string, name: string): K8sObject | undefined {
  return m.objects.find((o) => o.kind === kind && o.metadata.name === name);
}

/** The Deployment running `facts.entry`, its main container and the environment it gets. */
function workload(m: Manifests, facts: ProcessFacts) {
  const deployment = m.objects.find(
    (o) => o.kind === "Deployment" && o.spec?.template?.spec.containers.some((c) => [...(c.command ?? []), ...(c.args ?? [])].includes(facts.entry)),
  );
  if (!deployment) return undefined;
  const pod = deployment.spec!.template!;
  const container = pod.spec.containers.find((c) => [...(c.command ?? []), ...(c.args ?? [])].includes(facts.entry))!;
  const env: Record<string, string> = {};
  for (const from of container.envFrom ?? []) {
    if (from.configMapRef) {
      const cm = find(m, "ConfigMap", from.configMapRef.name);
      for (const [k, v] of Object.entries(cm?.data ?? {})) env[k] = v;
    }
    if (from.secretRef) {
      const s = find(m, "Secret", from.secretRef.name);
      for (const [k, v] of Object.entries({ ...s?.data, ...s?.stringData })) env[k] = v;
    }
  }
  for (const e of container.env ?? []) {
    const ref = e.valueFrom?.secretKeyRef ?? e.valueFrom?.configMapKeyRef;
    if (e.value !== undefined) env[e.name] = e.value;
    else if (ref) {
      const kind = e.valueFrom?.secretKeyRef ? "Secret" : "ConfigMap";
      const o = find(m, kind, ref.name);
      const v = { ...o?.data, ...o?.stringData }[ref.key];
      if (v !== undefined) env[e.name] = v;
    }
  }
  const portNumber = (p: number | string | undefined) =>
    typeof p === "number" ? p : container.ports?.find((cp) => cp.name === p)?.containerPort;
  return { deployment, pod, container, env, portNumber };
}

type Check<T> = (input: T) => string[];

const k8sChecks: Record<string, Check<Manifests>> = {
  "every object is namespace-agnostic, and each kustomization lists every manifest beside it": (m) => {
    const problems = m.objects.filter((o) => o.metadata.namespace).map((o) => `${o.kind}/${o.metadata.name} sets a namespace`);
    for (const { dir, resources, files } of m.dirs) {
      const listed = resources.filter((r) => /\.ya?ml$/.test(r)).sort();
      if (JSON.stringify(listed) !== JSON.stringify(files)) problems.push(`${dir}/kustomization.yaml resources ${JSON.stringify(listed)} ≠ ${JSON.stringify(files)}`);
    }
    return problems;
  },

  "each process has a Deployment, Service, HPA and PDB whose selectors match its pods (and only its pods)": (m) => {
    const problems: string[] = [];
    const pods = Object.values(FACTS).map((f) => ({ f, w: workload(m, f) }));
    for (const { f, w } of pods) {
      if (!w) {
        problems.push(`no Deployment runs ${f.entry}`);
        continue;
      }
      const labels = w.pod.metadata.labels;
      const others = pods.filter((p) => p.f !== f && p.w).map((p) => p.w!.pod.metadata.labels);
      const selects = (what: string, selector: Labels | undefined) => {
        if (!subset(selector, labels)) problems.push(`${what} selector ${JSON.stringify(selector)} does not match the ${f.id} pods`);
        if (others.some((l) => subset(selector, l))) problems.push(`${what} selector also matches another process's pods`);
      };
      selects(`Deployment/${w.deployment.metadata.name}`, w.deployment.spec?.selector?.matchLabels);
      const services = m.objects.filter((o) => o.kind === "Service" && subset(o.spec?.selector, labels));
      if (services.length !== 1) problems.push(`${f.id}: ${services.length} Services select its pods (want 1)`);
      for (const s of services) selects(`Service/${s.metadata.name}`, s.spec?.selector);
      const hpas = m.objects.filter(
        (o) => o.kind === "HorizontalPodAutoscaler" && o.spec?.scaleTargetRef?.kind === "Deployment" && o.spec.scaleTargetRef.name === w.deployment.metadata.name,
      );
      if (hpas.length !== 1) problems.push(`${f.id}: ${hpas.length} HPAs target Deployment/${w.deployment.metadata.name} (want 1)`);
      for (const h of hpas) {
        if (h.apiVersion !== "autoscaling/v2" || h.spec?.scaleTargetRef?.apiVersion !== "apps/v1") problems.push(`HPA/${h.metadata.name}: want autoscaling/v2 targeting apps/v1`);
        if (!h.spec?.metrics?.some((x) => x.type === "Resource" && x.resource?.name === "cpu")) problems.push(`HPA/${h.metadata.name} has no CPU metric`);
      }
      const pdbs = m.objects.filter((o) => o.kind === "PodDisruptionBudget" && subset(o.spec?.selector?.matchLabels, labels));
      if (pdbs.length !== 1) problems.push(`${f.id}: ${pdbs.length} PodDisruptionBudgets select its pods (want 1)`);
      for (const p of pdbs) {
        selects(`PodDisruptionBudget/${p.metadata.name}`, p.spec?.selector?.matchLabels);
        if (p.apiVersion !== "policy/v1") problems.push(`PodDisruptionBudget/${p.metadata.name}: want policy/v1`);
      }
    }
    return problems;
  },

  "scaling: the gateway autoscales 2..n; the pet service scales out on PostgreSQL, is one writer on SQLite": (m) => {
    const problems: string[] = [];
    const hpaFor = (d: K8sObject | undefined) =>
      m.objects.find((o) => o.kind === "HorizontalPodAutoscaler" && o.spec?.scaleTargetRef?.name === d?.metadata.name);
    const gw = workload(m, gatewayFacts);
    const gwHpa = hpaFor(gw?.deployment);
    if (!gwHpa || (gwHpa.spec?.minReplicas ?? 1) < 2 || (gwHpa.spec?.maxReplicas ?? 0) <= (gwHpa.spec?.minReplicas ?? 1)) {
      problems.push(`gateway HPA must scale from at least 2 up (got ${gwHpa?.spec?.minReplicas}..${gwHpa?.spec?.maxReplicas})`);
    }
    if (gw?.deployment.spec?.replicas !== undefined) problems.push("gateway Deployment sets replicas: the HPA owns the count");
    const pet = workload(m, petFacts);
    const petHpa = hpaFor(pet?.deployment);
    const pdb = m.objects.find((o) => o.kind === "PodDisruptionBudget" && subset(o.spec?.selector?.matchLabels, pet?.pod.metadata.labels));
    const petsDb = pet?.env.PETS_DB ?? "";
    const dataDir = path.posix.dirname(petsDb);
    const mount = pet?.container.volumeMounts?.find((v) => v.mountPath === dataDir);
    const volume = pet?.pod.spec.volumes?.find((v) => v.name === mount?.name);
    const pvc = volume?.persistentVolumeClaim && find(m, "PersistentVolumeClaim", volume.persistentVolumeClaim.claimName);
    if (m.variant === "postgres") {
      if (!isPostgresUrl(petsDb)) problems.push(`postgres: PETS_DB ${petsDb} is not a postgres:// URL`);
      if (pet?.container.env?.find((e) => e.name === "PETS_DB")?.valueFrom?.secretKeyRef === undefined) {
        problems.push("postgres: PETS_DB must come from a Secret (the URL holds a password)");
      }
      if (pet?.deployment.spec?.replicas !== undefined) problems.push("pet-service Deployment sets replicas: the HPA owns the count");
      if (!petHpa || (petHpa.spec?.minReplicas ?? 1) < 2 || (petHpa.spec?.maxReplicas ?? 0) <= (petHpa.spec?.minReplicas ?? 1)) {
        problems.push(`postgres: the pet-service HPA must scale from at least 2 up (got ${petHpa?.spec?.minReplicas}..${petHpa?.spec?.maxReplicas})`);
      }
      if (pet?.deployment.spec?.strategy?.type !== "RollingUpdate") problems.push(`postgres: pet-service strategy ${pet?.deployment.spec?.strategy?.type} (want RollingUpdate)`);
      if (pdb?.spec?.minAvailable !== 1 || pdb.spec.maxUnavailable !== undefined) problems.push("postgres: the pet-service PDB must be minAvailable 1");
      if (m.objects.some((o) => o.kind === "PersistentVolumeClaim")) problems.push("postgres: no PersistentVolumeClaim (the data is in PostgreSQL)");
    } else {
      if (pet?.deployment.spec?.replicas !== 1) problems.push(`pet-service Deployment replicas ${pet?.deployment.spec?.replicas} (want 1)`);
      if (pet?.deployment.spec?.strategy?.type !== "Recreate") problems.push(`pet-service strategy ${pet?.deployment.spec?.strategy?.type} (want Recreate)`);
      if (petHpa?.spec?.minReplicas !== 1 || petHpa.spec.maxReplicas !== 1) problems.push("pet-service HPA must be pinned to 1..1 while it runs on SQLite");
      if (pdb?.spec?.maxUnavailable !== 1) problems.push("sqlite: the pet-service PDB must be maxUnavailable 1 (minAvailable would block every drain)");
      if (!path.posix.isAbsolute(petsDb)) problems.push(`PETS_DB ${petsDb} must be an absolute path on the volume`);
      if (!pvc) problems.push(`the directory of PETS_DB (${dataDir}) is not a PersistentVolumeClaim mount`);
      else if (JSON.stringify(pvc.spec?.accessModes) !== '["ReadWriteOnce"]') problems.push(`PVC ${pvc.metadata.name} must be ReadWriteOnce only`);
    }
    return problems;
  },

  "container ports equal the ports the processes listen on; Services, the Ingress and PET_SERVICE_ADDR point at them": (m) => {
    const problems: string[] = [];
    for (const f of Object.values(FACTS)) {
      const w = workload(m, f);
      if (!w) continue;
      const listen = effectivePort(f, w.env);
      if (w.portNumber(f.id === "gateway" ? "http" : "grpc") !== listen) {
        problems.push(`${f.id}: container port ${JSON.stringify(w.container.ports)} ≠ ${f.portVar}=${listen}`);
      }
      const declared = new Set((w.container.ports ?? []).map((p) => p.containerPort));
      const served = new Set([listen, ...(w.env[f.metricsPortVar] ? [Number(w.env[f.metricsPortVar])] : [])]);
      for (const p of declared) if (!served.has(p)) problems.push(`${f.id}: container port ${p} is not a port the process listens on`);
      for (const s of m.objects.filter((o) => o.kind === "Service" && subset(o.spec?.selector, w.pod.metadata.labels))) {
        for (const p of s.spec?.ports ?? []) {
          if (w.portNumber(p.targetPort ?? p.port) === undefined) problems.push(`Service/${s.metadata.name} port ${p.name}: targetPort ${p.targetPort} is no container port`);
        }
      }
    }
    const gw = workload(m, gatewayFacts);
    const pet = workload(m, petFacts);
    if (gw && pet) {
      const petSvc = m.objects.find((o) => o.kind === "Service" && subset(o.spec?.selector, pet.pod.metadata.labels));
      const svcPort = petSvc?.spec?.ports?.find((p) => pet.portNumber(p.targetPort ?? p.port) === effectivePort(petFacts, pet.env));
      // Every replica's address, balanced by the gateway: a dns:/// target on a headless Service.
      const want = `dns:///${petSvc?.metadata.name}:${svcPort?.port}`;
      if (gw.env.PET_SERVICE_ADDR !== want) problems.push(`gateway PET_SERVICE_ADDR=${gw.env.PET_SERVICE_ADDR} (want ${want})`);
      if (petSvc && petSvc.spec?.clusterIP !== "None") problems.push(`Service/${petSvc.metadata.name} must be headless (clusterIP: None) for the gateways' round robin`);
      const gwSvc = m.objects.find((o) => o.kind === "Service" && subset(o.spec?.selector, gw.pod.metadata.labels));
      const ingresses = m.objects.filter((o) => o.kind === "Ingress");
      if (ingresses.length === 0) problems.push("no Ingress");
      const routed = new Set(ingresses.flatMap((ing) => ing.spec?.rules?.flatMap((r) => r.http?.paths ?? []) ?? []).map((p) => p.path));
      for (const pub of PUBLIC_PATHS) if (!routed.has(pub)) problems.push(`no Ingress routes ${pub}`);
      for (const ing of ingresses) {
        for (const p of ing.spec?.rules?.flatMap((r) => r.http?.paths ?? []) ?? []) {
          // Only the API and its reference page are public: /healthz, /readyz and /metrics share the
          // port but must not be routed.
          if (!PUBLIC_PATHS.some((pub) => p.path === pub || p.path.startsWith(`${pub}/`))) {
            problems.push(`Ingress/${ing.metadata.name} exposes ${p.path} (only ${PUBLIC_PATHS.join(" and ")} are public)`);
          }
          if (p.pathType !== "Prefix") problems.push(`Ingress path ${p.path}: pathType ${p.pathType} (want Prefix)`);
          const port = gwSvc?.spec?.ports?.find((sp) => sp.name === p.backend.service.port.name || sp.port === p.backend.service.port.number);
          if (p.backend.service.name !== gwSvc?.metadata.name || !port) problems.push(`Ingress path ${p.path} does not reach the gateway Service`);
        }
      }
    }
    return problems;
  },

  "every variable set for a process is one it reads, with values it accepts; config comes from a ConfigMap": (m) => {
    const problems: string[] = [];
    for (const f of Object.values(FACTS)) {
      const w = workload(m, f);
      if (!w) continue;
      for (const name of Object.keys(w.env)) if (!f.envNames.has(name)) problems.push(`${f.id}: ${name} is not a variable the ${f.id} reads`);
      for (const from of w.container.envFrom ?? []) {
        const ref = from.configMapRef ?? from.secretRef;
        const kind = from.configMapRef ? "ConfigMap" : "Secret";
        if (ref && !find(m, kind, ref.name)) problems.push(`${f.id}: envFrom ${kind} ${ref.name} does not exist`);
      }
      for (const e of w.container.env ?? []) {
        if (!e.valueFrom?.secretKeyRef) problems.push(`${f.id}: ${e.name} is set in the Deployment; non-secret config belongs in the ConfigMap`);
        else if (!(e.valueFrom.secretKeyRef.key in { ...find(m, "Secret", e.valueFrom.secretKeyRef.name)?.stringData })) {
          problems.push(`${f.id}: ${e.name} refers to a missing Secret key ${e.valueFrom.secretKeyRef.name}/${e.valueFrom.secretKeyRef.key}`);
        }
      }
      if (!w.container.envFrom?.some((x) => x.configMapRef)) problems.push(`${f.id}: no ConfigMap`);
      try {
        f.validate(w.env);
      } catch (err) {
        problems.push(`${f.id} refuses its environment: ${(err as Error).message}`);
      }
    }
    const gw = workload(m, gatewayFacts);
    if (gw && gw.container.env?.find((e) => e.name === "REDIS_URL")?.valueFrom?.secretKeyRef === undefined) {
      problems.push("gateway REDIS_URL must come from a Secret");
    }
    if (gw?.env.REDIS_URL) {
      try {
        parseRedisUrl(gw.env.REDIS_URL);
      } catch (err) {
        problems.push(`REDIS_URL: ${(err as Error).message}`);
      }
    }
    return problems;
  },

  "gateway probes: liveness GET /healthz, readiness GET /readyz on its port; metrics scraped there": (m) => {
    const w = workload(m, gatewayFacts);
    if (!w) return ["no gateway Deployment"];
    const problems: string[] = [];
    const listen = effectivePort(gatewayFacts, w.env);
    const http = (name: string, probe: Probe | undefined, wantPath: string) => {
      if (probe?.httpGet?.path !== wantPath || w.portNumber(probe.httpGet.port) !== listen) {
        problems.push(`gateway ${name}: ${JSON.stringify(probe)} (want GET ${wantPath} on ${listen})`);
      }
    };
    http("livenessProbe", w.container.livenessProbe, "/healthz");
    http("readinessProbe", w.container.readinessProbe, "/readyz");
    if (w.container.startupProbe) http("startupProbe", w.container.startupProbe, "/healthz");
    const a = w.pod.metadata.annotations ?? {};
    if (a["prometheus.io/scrape"] !== "true" || Number(a["prometheus.io/port"]) !== listen || a["prometheus.io/path"] !== "/metrics") {
      problems.push(`gateway scrape annotations ${JSON.stringify(a)} (want /metrics on ${listen})`);
    }
    return problems;
  },

  "pet-service probes are gRPC health checks on its gRPC port; readiness asks for petstore.v1.PetService": (m) => {
    const w = workload(m, petFacts);
    if (!w) return ["no pet-service Deployment"];
    const problems: string[] = [];
    const listen = effectivePort(petFacts, w.env);
    for (const name of ["livenessProbe", "readinessProbe", "startupProbe"] as const) {
      const probe = w.container[name];
      if (!probe && name === "startupProbe") continue;
      // Kubernetes' grpc probe takes a number only (no named ports).
      if (typeof probe?.grpc?.port !== "number" || probe.grpc.port !== listen) problems.push(`pet-service ${name}: ${JSON.stringify(probe)} (want grpc on ${listen})`);
    }
    if (w.container.readinessProbe?.grpc?.service !== PET_SERVICE_NAME) problems.push(`pet-service readiness must check service ${PET_SERVICE_NAME}`);
    const a = w.pod.metadata.annotations ?? {};
    const metricsPort = w.env[petFacts.metricsPortVar];
    if (metricsPort !== undefined) {
      if (a["prometheus.io/scrape"] !== "true" || a["prometheus.io/port"] !== metricsPort || w.portNumber("metrics") !== Number(metricsPort)) {
        problems.push(`pet-service ${petFacts.metricsPortVar}=${metricsPort} needs a "metrics" container port and scrape annotations on it`);
      }
    } else if (a["prometheus.io/scrape"] === "true") {
      problems.push(`pet-service is scraped but ${petFacts.metricsPortVar} is not set (the gRPC port serves no /metrics)`);
    }
    return problems;
  },

  "keys: public keys from a Secret land in KEYS_DIR/public/<kid>.pem, revoked.json in KEYS_DIR; no private key anywhere": (m) => {
    const w = workload(m, gatewayFacts);
    if (!w) return ["no gateway Deployment"];
    const problems: string[] = [];
    const keysDir = w.env.KEYS_DIR ?? "";
    if (!path.posix.isAbsolute(keysDir)) problems.push(`gateway KEYS_DIR=${keysDir} must be absolute`);
    // Where the gateway code looks, relative to KEYS_DIR.
    const pubRel = (kid: string) => path.posix.relative(keysDir, publicKeyPath(keysDir, kid));
    const revokedRel = path.posix.relative(keysDir, revokedFilePath(keysDir));
    const files = new Map<string, { kind: string; name: string; key: string; optional: boolean }>();
    for (const mount of w.container.volumeMounts ?? []) {
      const vol = w.pod.spec.volumes?.find((v) => v.name === mount.name);
      if (mount.subPath) problems.push(`${mount.name}: subPath mounts never see Secret/ConfigMap updates`);
      const sources = vol?.projected?.sources ?? [
        ...(vol?.secret ? [{ secret: { name: vol.secret.secretName, items: vol.secret.items } }] : []),
        ...(vol?.configMap ? [{ configMap: vol.configMap }] : []),
      ];
      for (const src of sources) {
        const s = src.secret ?? src.configMap;
        const kind = src.secret ? "Secret" : "ConfigMap";
        if (!s) continue;
        if (!s.items) problems.push(`${kind} ${s.name} is mounted without items`);
        for (const item of s.items ?? []) {
          const abs = path.posix.join(mount.mountPath, item.path);
          files.set(path.posix.relative(keysDir, abs), { kind, name: s.name, key: item.key, optional: "optional" in s && !!s.optional });
        }
      }
    }
    const pems = [...files.entries()].filter(([rel]) => rel.endsWith(".pem"));
    if (pems.length === 0) problems.push(`no public key is mounted under ${keysDir}`);
    for (const [rel, src] of pems) {
      const kid = path.posix.basename(rel, ".pem");
      if (rel !== pubRel(kid) || !KEY_ID_PATTERN.test(kid)) problems.push(`${src.kind} ${src.name}/${src.key} lands at ${keysDir}/${rel}, not at a public key path`);
      if (src.kind !== "Secret") problems.push(`public key ${rel} comes from a ${src.kind} (want a Secret)`);
      if (src.key !== `${kid}.pem`) problems.push(`Secret key ${src.key} should be named after its file ${kid}.pem`);
      const secret = find(m, "Secret", src.name);
      if (!secret || !(src.key in { ...secret.data, ...secret.stringData })) problems.push(`Secret ${src.name} has no key ${src.key}`);
    }
    const revoked = files.get(revokedRel);
    if (!revoked) problems.push(`nothing is mounted at ${revokedFilePath(keysDir)}`);
    else if (!revoked.optional) problems.push(`${revoked.kind} ${revoked.name} (revocations) must be optional: created by the operator`);
    for (const o of m.objects) {
      const values = Object.values({ ...o.data, ...o.stringData });
      if (values.some((v) => PEM_BLOCK.test(v))) problems.push(`${o.kind}/${o.metadata.name} contains key material`);
      if (o.kind === "Secret" && !o.file.includes(".example.")) problems.push(`Secret ${o.metadata.name} outside the *.example.yaml template`);
      if (o.kind === "Secret" && values.some((v) => !v.includes("REPLACE_WITH"))) problems.push(`Secret ${o.metadata.name}: every value must be a REPLACE_WITH placeholder`);
    }
    return problems;
  },

  "pods: entry point from package.json, non-root, read-only root, limits, no service links, graceful shutdown": (m) => {
    const problems: string[] = [];
    for (const f of Object.values(FACTS)) {
      const w = workload(m, f);
      if (!w) continue;
      const c = w.container;
      if (c.command) problems.push(`${f.id}: use args, not command (the image's tini ENTRYPOINT must stay)`);
      if (JSON.stringify(c.args) !== JSON.stringify(["node", f.entry])) problems.push(`${f.id}: args ${JSON.stringify(c.args)}`);
      if (!existsSync(path.join(ROOT, f.entry))) problems.push(`${f.id}: ${f.entry} does not exist`);
      // 1000 = the image's USER node, so files the image gives to node (/app/data) stay writable.
      if (w.pod.spec.securityContext?.runAsNonRoot !== true || w.pod.spec.securityContext.runAsUser !== 1000) problems.push(`${f.id}: pod must run as a non-root uid (1000, the image's node user)`);
      if (c.securityContext?.readOnlyRootFilesystem !== true || c.securityContext.allowPrivilegeEscalation !== false) problems.push(`${f.id}: read-only root, no privilege escalation`);
      const tmp = c.volumeMounts?.find((v) => v.mountPath === "/tmp");
      if (!w.pod.spec.volumes?.find((v) => v.name === tmp?.name)?.emptyDir) problems.push(`${f.id}: /tmp must be an emptyDir (scratch space; read-only root)`);
      for (const k of ["requests", "limits"] as const) {
        if (!c.resources?.[k]?.cpu || !c.resources[k].memory) problems.push(`${f.id}: resources.${k} needs cpu and memory`);
      }
      // Service links inject <SERVICE>_PORT=tcp://... variables that collide with ours.
      if (w.pod.spec.enableServiceLinks !== false) problems.push(`${f.id}: enableServiceLinks must be false`);
      if (c.image?.split(":")[0] !== "pet-store-api") problems.push(`${f.id}: image ${c.image}`);
    }
    const gw = workload(m, gatewayFacts);
    if (gw) {
      const stop = gw.container.lifecycle?.preStop;
      const sleep = stop?.sleep?.seconds ?? (stop?.exec?.command?.[0] === "sleep" ? Number(stop.exec.command[1]) : NaN);
      const parsed = GATEWAY_ENV.safeParse(gw.env);
      const grace = parsed.success ? parsed.data.SHUTDOWN_GRACE_MS : NaN;
      if (!(sleep > 0)) problems.push("gateway: a preStop sleep lets endpoint removal propagate before SIGTERM");
      if (!((gw.pod.spec.terminationGracePeriodSeconds ?? 30) * 1000 > sleep * 1000 + grace)) {
        problems.push(`gateway: terminationGracePeriodSeconds must exceed preStop ${sleep}s + SHUTDOWN_GRACE_MS ${grace}`);
      }
    }
    return problems;
  },
};

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
interface Compose {
  services: Record<string, ComposeService>;
}

/**
 * compose.yaml as `docker compose config` sees it: `${NAME}` and `${NAME:?message}` become
 * `example-name` (the operator's value), `${NAME:-default}` its default (left unset).
 */
function loadCompose(): Compose {
  const text = readFileSync(path.join(DEPLOY, "compose.yaml"), "utf8")
    .replace(/\$\{[A-Z_][A-Z0-9_]*:?-([^}]*)\}/g, "$1")
    .replace(/\$\{([A-Z_][A-Z0-9_]*)(?::?\?[^}]*)?\}/g, (_, name: string) => `example-${name.toLowerCase().replaceAll("_", "-")}`);
  return parseAllDocuments(text, { merge: true })[0]!.toJS() as Compose;
}

/** A compose health check's command line: a ["CMD", ...] list's words, or the string (CMD-SHELL). */
const healthCommand = (test: string[] | string) => (typeof test === "string" ? test : test.slice(test[0] === "CMD" ? 1 : 0).join(" "));

const composeServicesOf = (c: Compose, f: ProcessFacts) =>
  Object.entries(c.services).filter(([, s]) => JSON.stringify(s.command) === JSON.stringify(["node", f.entry]));

const composeChecks: Record<string, Check<Compose>> = {
  "compose runs postgres, redis, a pet-service with 2+ replicas and two gateways from the deploy/Dockerfile image": (c) => {
    const problems: string[] = [];
    if (!c.services.redis?.image?.startsWith("redis:")) problems.push("no redis service");
    if (!c.services.postgres?.image?.startsWith("postgres:")) problems.push("no postgres service");
    const pets = composeServicesOf(c, petFacts);
    const gws = composeServicesOf(c, gatewayFacts);
    if (pets.length !== 1 || pets[0]![0] !== "pet-service") problems.push(`want one pet-service service (scaled with deploy.replicas), got ${pets.map(([n]) => n)}`);
    if ((pets[0]?.[1].deploy?.replicas ?? 1) < 2) problems.push(`pet-service: deploy.replicas ${pets[0]?.[1].deploy?.replicas} (want 2 or more)`);
    if (gws.length !== 2) problems.push(`want two gateway services, got ${gws.map(([n]) => n)}`);
    for (const [name, s] of [...pets, ...gws]) {
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
      const keysDir = env.KEYS_DIR ?? "";
      const mounts = (s.volumes ?? []).filter((v): v is Exclude<typeof v, string> => typeof v === "object");
      const keys = mounts.find((v) => v.target === keysDir);
      if (keys?.type !== "bind" || keys.read_only !== true || path.resolve(DEPLOY, keys.source ?? "") !== path.join(ROOT, "keys")) {
        problems.push(`${name}: KEYS_DIR ${keysDir} must be the repository's keys/ directory, read-only`);
      }
      if (!mounts.some((v) => v.type === "tmpfs" && v.target === privateKeyDir(keysDir))) problems.push(`${name}: the signing keys (${privateKeyDir(keysDir)}) must be masked`);
      const grace = Number(/^(\d+)s$/.exec(s.stop_grace_period ?? "")?.[1]) * 1000;
      const parsed = GATEWAY_ENV.safeParse(env);
      if (!parsed.success || !(grace > parsed.data.SHUTDOWN_GRACE_MS)) problems.push(`${name}: stop_grace_period must exceed SHUTDOWN_GRACE_MS`);
    }
    const published = composeServicesOf(c, gatewayFacts).flatMap(([, s]) => s.ports ?? []);
    if (new Set(published.map((p) => p.split(":").slice(0, -1).join(":"))).size !== published.length) problems.push("gateways publish the same host port");
    return problems;
  },
};

// ---------------------------------------------------------------------------------------------
// Dockerfile
// ---------------------------------------------------------------------------------------------

interface Instruction {
  op: string;
  args: string;
  stage: number;
}

/** Instructions with line continuations joined and comments dropped. */
function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  let stage = -1;
  const logical = text
    .split("\n")
    .filter((l) => !/^\s*#/.test(l))
    .join("\n")
    .replace(/\\\n/g, " ");
  for (const line of logical.split("\n")) {
    const m = /^\s*([A-Za-z]+)\s+(.*)$/.exec(line);
    if (!m) continue;
    const op = m[1]!.toUpperCase();
    if (op === "FROM") stage++;
    out.push({ op, args: m[2]!.trim(), stage });
  }
  return out;
}

/** Top-level directories of every relative import reachable from the entry files. */
function importedTopDirs(entries: string[]): Set<string> {
  const seen = new Set<string>();
  const queue = [...entries];
  while (queue.length) {
    const rel = queue.pop()!;
    if (seen.has(rel)) continue;
    seen.add(rel);
    const text = read(rel);
    for (const m of text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)["'](\.{1,2}\/[^"']+)["']/g)) {
      const target = path.posix.normalize(path.posix.join(path.posix.dirname(rel), m[1]!)).replace(/\.js$/, ".ts");
      if (target.endsWith(".ts") && existsSync(path.join(ROOT, target))) queue.push(target);
    }
  }
  return new Set([...seen].map((f) => f.split("/")[0]!));
}

interface DockerInput {
  dockerfile: string;
  ignore: string;
}

const dockerChecks: Record<string, Check<DockerInput>> = {
  "multi-stage: production deps built with the native toolchain, copied into a runtime stage": ({ dockerfile }) => {
    const ins = parseDockerfile(dockerfile);
    const problems: string[] = [];
    const froms = ins.filter((i) => i.op === "FROM");
    const last = froms.length - 1;
    if (froms.length < 2) problems.push(`${froms.length} FROM (want a multi-stage build)`);
    const ci = ins.find((i) => i.op === "RUN" && /\bnpm ci\b/.test(i.args));
    if (!ci || ci.stage === last || !/--omit=dev\b/.test(ci.args)) problems.push("npm ci --omit=dev must run in a build stage");
    if (!ins.some((i) => i.op === "RUN" && i.stage === ci?.stage && /python3/.test(i.args) && /\bmake\b/.test(i.args) && /g\+\+/.test(i.args))) {
      problems.push("the deps stage must install python3, make and g++ (sqlite3 is a native addon)");
    }
    const stageName = /\bAS\s+(\S+)/i.exec(froms[ci?.stage ?? 0]?.args ?? "")?.[1];
    if (!ins.some((i) => i.op === "COPY" && i.stage === last && i.args.includes(`--from=${stageName}`) && i.args.includes("node_modules"))) {
      problems.push("the runtime stage must copy node_modules from the deps stage");
    }
    if (ins.some((i) => i.stage === last && i.op === "RUN" && /\bnpm\b/.test(i.args))) problems.push("no npm in the runtime stage");
    return problems;
  },

  "runs as a non-root USER with a node-owned data directory": ({ dockerfile }) => {
    const ins = parseDockerfile(dockerfile);
    const last = Math.max(...ins.map((i) => i.stage));
    const problems: string[] = [];
    const users = ins.filter((i) => i.stage === last && i.op === "USER");
    const user = users.at(-1)?.args;
    if (!user || /^(root|0)(:|$)/.test(user)) problems.push(`final USER ${user} (want non-root)`);
    const afterUser = ins.slice(ins.indexOf(users.at(-1)!) + 1).map((i) => i.op);
    if (afterUser.some((op) => op === "RUN" || op === "USER")) problems.push("nothing may run or switch user after the final USER");
    if (!ins.some((i) => i.stage === last && i.op === "RUN" && /chown\s+node:node\s+\/app\/data\b/.test(i.args))) problems.push("/app/data must be owned by node");
    if (ins.find((i) => i.stage === last && i.op === "WORKDIR")?.args !== "/app") problems.push("WORKDIR /app");
    return problems;
  },

  "ports, entry points and sources agree with the code": ({ dockerfile }) => {
    const ins = parseDockerfile(dockerfile);
    const last = Math.max(...ins.map((i) => i.stage));
    const problems: string[] = [];
    const exposed = new Set(ins.filter((i) => i.op === "EXPOSE").flatMap((i) => i.args.split(/\s+/).map((p) => Number(p.split("/")[0]))));
    for (const f of Object.values(FACTS)) if (!exposed.has(f.defaultPort)) problems.push(`EXPOSE lacks ${f.portVar} ${f.defaultPort}`);
    const cmd = ins.filter((i) => i.op === "CMD").at(-1)?.args ?? "";
    const execForm = (text: string): unknown => {
      try {
        return JSON.parse(text);
      } catch {
        return text;
      }
    };
    if (JSON.stringify(execForm(cmd)) !== JSON.stringify(["node", gatewayFacts.entry])) {
      problems.push(`CMD ${cmd} (want exec form node ${gatewayFacts.entry})`);
    }
    const entrypoint = ins.filter((i) => i.op === "ENTRYPOINT").at(-1)?.args ?? "";
    if (!/tini/.test(entrypoint)) problems.push("ENTRYPOINT must be an init (tini) that forwards signals to node");
    const copied = new Set(
      ins
        .filter((i) => i.op === "COPY" && i.stage === last && !i.args.includes("--from="))
        .flatMap((i) => i.args.split(/\s+/).filter((a) => !a.startsWith("--")).slice(0, -1)),
    );
    for (const src of copied) if (!existsSync(path.join(ROOT, src))) problems.push(`COPY ${src}: no such path`);
    for (const dir of importedTopDirs([gatewayFacts.entry, petFacts.entry])) if (!copied.has(dir)) problems.push(`the entry points import ${dir}/, which is not copied`);
    for (const f of ["package.json", "deploy/grpc-health-check.mjs"]) if (!copied.has(f)) problems.push(`${f} is not copied`);
    return problems;
  },

  "Dockerfile.dockerignore is an allow list that admits every COPY source and keeps keys and local state out": ({ dockerfile, ignore }) => {
    const ins = parseDockerfile(dockerfile);
    const lines = ignore.split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("#"));
    const problems: string[] = [];
    if (lines[0] !== "*") problems.push("the ignore file must start with * (allow list)");
    const sources = ins
      .filter((i) => i.op === "COPY" && !i.args.includes("--from="))
      .flatMap((i) => i.args.split(/\s+/).filter((a) => !a.startsWith("--")).slice(0, -1));
    for (const src of sources) if (!lines.includes(`!${src}`)) problems.push(`COPY ${src} is not allowed by the ignore file`);
    for (const must of ["keys/private", "keys/public", "keys/issued.jsonl", "keys/revoked.json", "**/*.pem", "**/node_modules", "**/*.sqlite"]) {
      if (!lines.includes(must)) problems.push(`the ignore file must exclude ${must}`);
    }
    return problems;
  },
};

// ---------------------------------------------------------------------------------------------
// The tests
// ---------------------------------------------------------------------------------------------

const rendered: Record<Variant, Manifests> = { postgres: loadManifests("postgres"), sqlite: loadManifests("sqlite") };
const compose = loadCompose();
const docker: DockerInput = { dockerfile: read("deploy/Dockerfile"), ignore: read("deploy/Dockerfile.dockerignore") };

describe("what the checks compare against", () => {
  it("reads the processes' variables and ports from the code", () => {
    expect(gatewayFacts.entry).toBe("gateway/main.ts");
    expect(petFacts.entry).toBe("pet-service/main.ts");
    expect(gatewayFacts.defaultPort).toBe(8080);
    expect(petFacts.defaultPort).toBe(50051);
    expect([...gatewayFacts.envNames]).toEqual(expect.arrayContaining(["GATEWAY_PORT", "PET_SERVICE_ADDR", "REDIS_URL", "KEYS_DIR"]));
    expect([...petFacts.envNames]).toEqual(expect.arrayContaining(["PET_SERVICE_HOST", "PET_SERVICE_PORT", "PETS_DB"]));
    expect(petFacts.envNames.has("GATEWAY_PORT")).toBe(false);
  });

  it("the probed endpoints exist in the code", () => {
    // HTTP paths the gateway registers (ops routes live outside /v1).
    const gatewayText = readdirSync(path.join(ROOT, "gateway"))
      .filter((f) => f.endsWith(".ts"))
      .map((f) => read(`gateway/${f}`))
      .join("\n");
    const paths = new Set([...gatewayText.matchAll(/\.get\(\s*["'](\/[a-z]+)["']/g)].map((m) => m[1]));
    expect([...paths]).toEqual(expect.arrayContaining(["/healthz", "/readyz", "/metrics"]));
    // The pet service answers grpc.health.v1 for the whole server and for PetService.
    const server = read("pet-service/server.ts");
    expect(server).toMatch(/HealthImplementation/);
    expect(server).toMatch(/\[\s*""\s*,\s*PET_SERVICE_NAME\s*\]/);
  });

  it("parses every YAML file of deploy/ and finds both processes", () => {
    for (const variant of VARIANTS) {
      const m = rendered[variant];
      expect(m.dirs.map((d) => d.dir)).toEqual([variant, "base"]);
      expect(m.dirs[1]!.files).toEqual(["config.yaml", "gateway.yaml", "ingress.yaml", "pet-service.yaml"]);
      expect(workload(m, gatewayFacts)).toBeDefined();
      expect(workload(m, petFacts)).toBeDefined();
    }
    expect(Object.keys(compose.services)).toEqual(expect.arrayContaining(["postgres", "redis", "pet-service", "gateway-1", "gateway-2"]));
  });

  it("no file under deploy/ holds key material", () => {
    const walk = (dir: string): string[] =>
      readdirSync(dir).flatMap((n) => (statSync(path.join(dir, n)).isDirectory() ? walk(path.join(dir, n)) : [path.join(dir, n)]));
    const leaking = walk(DEPLOY).filter((f) => PEM_BLOCK.test(readFileSync(f, "utf8")));
    expect(leaking).toEqual([]);
  });
});

describe.each(VARIANTS)("Kubernetes manifests (%s overlay) agree with the code", (variant) => {
  it.each(Object.entries(k8sChecks))("%s", (_name, check) => expect(check(rendered[variant])).toEqual([]));
});

/** kubectl's own rendering, where kubectl is installed: this file's renderer must agree with it. */
const kubectl = spawnSync("kubectl", ["version", "--client"], { stdio: "ignore" }).status === 0;
describe.skipIf(!kubectl)("the overlays render with kubectl kustomize as this test renders them", () => {
  it.each(VARIANTS)("%s", (variant) => {
    const out = spawnSync("kubectl", ["kustomize", path.join(K8S, variant)], { encoding: "utf8" });
    expect(out.stderr).toBe("");
    const key = (o: { kind: string; metadata: { name: string } }) => `${o.kind}/${o.metadata.name}`;
    const theirs = parseAllDocuments(out.stdout).map((d) => d.toJS() as K8sObject).sort((a, b) => key(a).localeCompare(key(b)));
    const ours = rendered[variant].objects
      .filter((o) => o.file !== "secrets.example.yaml")
      .map(({ file: _file, ...o }) => o)
      .sort((a, b) => key(a).localeCompare(key(b)));
    expect(ours).toEqual(theirs);
  });
});

describe("compose.yaml agrees with the code", () => {
  it.each(Object.entries(composeChecks))("%s", (_name, check) => expect(check(compose)).toEqual([]));
});

describe("Dockerfile agrees with the code", () => {
  it.each(Object.entries(dockerChecks))("%s", (_name, check) => expect(check(docker)).toEqual([]));
});

/** Runs every check of a family on a mutated copy; the problems found. */
const allProblems = <T>(checks: Record<string, Check<T>>, input: T) => Object.values(checks).flatMap((c) => c(input));

describe("the checks catch mistakes", () => {
  const k8s = (mutate: (m: Manifests) => void, variant: Variant = "sqlite") => {
    const m = clone(rendered[variant]);
    mutate(m);
    return allProblems(k8sChecks, m);
  };
  const cm = (m: Manifests, name: string) => find(m, "ConfigMap", name)!.data!;
  const gw = (m: Manifests) => workload(m, gatewayFacts)!;
  const pet = (m: Manifests) => workload(m, petFacts)!;

  it.each<[string, (m: Manifests) => void, RegExp]>([
    ["a misspelt gateway variable", (m) => void (cm(m, "gateway-config").GATEWAY_PROT = "8080"), /GATEWAY_PROT is not a variable the gateway reads/],
    ["a gateway variable given to the pet service", (m) => void (cm(m, "pet-service-config").REDIS_URL = "redis://x:6379"), /REDIS_URL is not a variable the pet-service reads/],
    ["a value the gateway refuses", (m) => void (cm(m, "gateway-config").BAN_AFTER = "many"), /refuses its environment: BAN_AFTER/],
    ["a port variable that disagrees with the container port", (m) => void (cm(m, "gateway-config").GATEWAY_PORT = "9090"), /container port .* GATEWAY_PORT=9090/],
    ["a wrong gRPC container port", (m) => void (pet(m).container.ports![0]!.containerPort = 50052), /container port/],
    ["PET_SERVICE_ADDR to a wrong port", (m) => void (cm(m, "gateway-config").PET_SERVICE_ADDR = "pet-service:50052"), /PET_SERVICE_ADDR/],
    ["a liveness probe on /readyz", (m) => void (gw(m).container.livenessProbe!.httpGet!.path = "/readyz"), /gateway livenessProbe/],
    ["a readiness probe on the wrong port", (m) => void (gw(m).container.readinessProbe!.httpGet!.port = 9090), /gateway readinessProbe/],
    ["an HTTP probe on the pet service", (m) => void (pet(m).container.livenessProbe = { httpGet: { path: "/healthz", port: 50051 } }), /pet-service livenessProbe/],
    ["a readiness check of the wrong gRPC service", (m) => void (pet(m).container.readinessProbe!.grpc!.service = "pets"), /readiness must check/],
    ["a Service selector that misses the pods", (m) => void (find(m, "Service", "gateway")!.spec!.selector!["app.kubernetes.io/component"] = "gw"), /0 Services select/],
    ["a PDB that selects both processes", (m) => void delete find(m, "PodDisruptionBudget", "gateway")!.spec!.selector!.matchLabels!["app.kubernetes.io/component"], /PodDisruptionBudgets select|also matches/],
    ["a missing HPA", (m) => void (m.objects = m.objects.filter((o) => !(o.kind === "HorizontalPodAutoscaler" && o.metadata.name === "pet-service"))), /0 HPAs/],
    ["a pet service scaled to 2", (m) => void (find(m, "HorizontalPodAutoscaler", "pet-service")!.spec!.maxReplicas = 2), /pinned to 1\.\.1/],
    ["a rolling pet-service update", (m) => void (pet(m).deployment.spec!.strategy = { type: "RollingUpdate" }), /want Recreate/],
    ["public keys mounted off KEYS_DIR/public", (m) => void (gw(m).pod.spec.volumes![0]!.projected!.sources[0]!.secret!.items![0]!.path = "REPLACE_WITH_KID.pem"), /not at a public key path/],
    ["KEYS_DIR elsewhere than the keys mount", (m) => void (cm(m, "gateway-config").KEYS_DIR = "/etc/keys"), /not at a public key path/],
    ["a private key in a Secret", (m) => void (find(m, "Secret", "gateway-keys")!.stringData!["x.pem"] = "-----BEGIN PRIVATE KEY-----"), /key material/],
    ["a REDIS_URL set as plain text", (m) => void (gw(m).container.env = [{ name: "REDIS_URL", value: "redis://r:6379" }]), /REDIS_URL must come from a Secret/],
    ["an Ingress exposing /metrics", (m) => void find(m, "Ingress", "gateway")!.spec!.rules![0]!.http!.paths.push({ path: "/metrics", pathType: "Prefix", backend: { service: { name: "gateway", port: { name: "http" } } } }), /exposes \/metrics/],
    ["a namespace", (m) => void (m.objects[0]!.metadata.namespace = "prod"), /sets a namespace/],
    ["a pod that may run as root", (m) => void delete pet(m).pod.spec.securityContext!.runAsNonRoot, /non-root uid/],
    ["a wrong entry point", (m) => void (gw(m).container.args = ["npm", "run", "start:gateway"]), /no Deployment runs gateway\/main\.ts/],
    ["service links left on", (m) => void delete gw(m).pod.spec.enableServiceLinks, /enableServiceLinks/],
  ])("%s", (_name, mutate, message) => {
    const problems = k8s(mutate);
    expect(problems.join("\n")).toMatch(message);
  });

  it.each<[string, (m: Manifests) => void, RegExp]>([
    ["a pet service on PostgreSQL held at one replica", (m) => void (find(m, "HorizontalPodAutoscaler", "pet-service")!.spec!.minReplicas = 1), /scale from at least 2 up/],
    ["a PDB that lets every replica go", (m) => void (find(m, "PodDisruptionBudget", "pet-service")!.spec = { ...find(m, "PodDisruptionBudget", "pet-service")!.spec, minAvailable: undefined, maxUnavailable: 1 }), /minAvailable 1/],
    ["PETS_DB with its password in the ConfigMap", (m) => void ((pet(m).container.env = []), (cm(m, "pet-service-config").PETS_DB = "postgres://pets:pw@db/pets")), /PETS_DB must come from a Secret/],
    ["a SQLite path on the PostgreSQL overlay", (m) => void (find(m, "Secret", "pet-service-db")!.stringData!.PETS_DB = "/app/data/REPLACE_WITH.sqlite"), /not a postgres:\/\/ URL/],
    ["a ClusterIP pet-service Service", (m) => void delete find(m, "Service", "pet-service")!.spec!.clusterIP, /must be headless/],
    ["PET_SERVICE_ADDR to one address", (m) => void (cm(m, "gateway-config").PET_SERVICE_ADDR = "pet-service:50051"), /PET_SERVICE_ADDR=pet-service:50051 \(want dns:\/\/\/pet-service:50051\)/],
    ["a Recreate rollout", (m) => void (pet(m).deployment.spec!.strategy = { type: "Recreate" }), /want RollingUpdate/],
  ])("postgres: %s", (_name, mutate, message) => {
    expect(k8s(mutate, "postgres").join("\n")).toMatch(message);
  });

  const composeWith = (mutate: (c: Compose) => void) => {
    const c = clone(compose);
    mutate(c);
    return allProblems(composeChecks, c).join("\n");
  };
  it.each<[string, (c: Compose) => void, RegExp]>([
    ["a misspelt variable", (c) => void (c.services["gateway-1"]!.environment!.REDIS_ULR = "redis://redis:6379"), /REDIS_ULR is not a variable/],
    ["a pet service on another port", (c) => void (c.services["pet-service"]!.environment!.PET_SERVICE_PORT = "50052"), /PET_SERVICE_ADDR|healthcheck/],
    ["a gateway published to the wrong container port", (c) => void (c.services["gateway-2"]!.ports = ["8082:80"]), /must target 8080/],
    ["one gateway only", (c) => void delete c.services["gateway-2"], /two gateway services/],
    ["one pet-service replica", (c) => void (c.services["pet-service"]!.deploy = { replicas: 1 }), /want 2 or more/],
    ["the pet service on a SQLite file", (c) => void (c.services["pet-service"]!.environment!.PETS_DB = "/app/data/pets.sqlite"), /postgres:\/\/ URL of the postgres service/],
    ["gateways pinned to one address", (c) => void (c.services["gateway-1"]!.environment!.PET_SERVICE_ADDR = "pet-service:50051"), /want dns:\/\/\/pet-service:50051/],
    ["the signing keys visible to a gateway", (c) => void (c.services["gateway-1"]!.volumes = c.services["gateway-1"]!.volumes!.filter((v) => typeof v === "string" || v.type !== "tmpfs" || v.target === "/tmp")), /must be masked/],
    ["no health condition", (c) => void (c.services["gateway-1"]!.depends_on = { redis: { condition: "service_started" } }), /service_healthy/],
  ])("compose: %s", (_name, mutate, message) => expect(composeWith(mutate)).toMatch(message));

  const dockerWith = (dockerfile: string, ignore = docker.ignore) => allProblems(dockerChecks, { dockerfile, ignore }).join("\n");
  it.each<[string, (d: string) => string, RegExp]>([
    ["a root USER at the end", (d) => `${d}\nUSER root\n`, /final USER root/],
    ["a single stage", (d) => d.replace(/FROM \$\{NODE_IMAGE\} AS runtime[\s\S]*/, ""), /multi-stage|runtime stage/],
    ["dev dependencies installed", (d) => d.replace("--omit=dev", ""), /--omit=dev/],
    ["a CMD through npm", (d) => d.replace(/^CMD .*$/m, 'CMD ["npm", "run", "start:gateway"]'), /CMD/],
    ["a source directory left out", (d) => d.replace(/^COPY lib .*$/m, ""), /import lib\//],
    ["a port not exposed", (d) => d.replace("EXPOSE 8080 50051 9464", "EXPOSE 8080"), /EXPOSE lacks PET_SERVICE_PORT/],
  ])("Dockerfile: %s", (_name, mutate, message) => expect(dockerWith(mutate(docker.dockerfile))).toMatch(message));

  it("Dockerfile.dockerignore: a COPY source it does not admit", () => {
    expect(dockerWith(docker.dockerfile, docker.ignore.replace("!proto\n", ""))).toMatch(/COPY proto is not allowed/);
  });
});

// ---------------------------------------------------------------------------------------------
// deploy/grpc-health-check.mjs (the compose health check) against a real gRPC server
// ---------------------------------------------------------------------------------------------

describe("deploy/grpc-health-check.mjs", () => {
  const health = new HealthImplementation({ "": "SERVING", [PET_SERVICE_NAME]: "SERVING" });
  const server = new grpc.Server();
  let address = "";

  beforeAll(async () => {
    health.addToServer(server);
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
    );
    address = `127.0.0.1:${port}`;
  });
  afterAll(() => server.forceShutdown());

  const run = (...args: string[]) =>
    new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [path.join(DEPLOY, "grpc-health-check.mjs"), ...args], { cwd: ROOT, stdio: ["ignore", "ignore", "pipe"] });
      let stderr = "";
      child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
      child.on("close", (code) => resolve({ code, stderr }));
    });

  it.each<[ServingStatus, number]>([
    ["SERVING", 0],
    ["NOT_SERVING", 1],
  ])("%s → exit code %i", async (status, code) => {
    health.setStatus(PET_SERVICE_NAME, status);
    const r = await run(address, PET_SERVICE_NAME);
    expect(r.code).toBe(code);
    if (code) expect(r.stderr).toMatch(/NOT_SERVING/);
  });

  it("fails for an unknown service and for nothing listening", async () => {
    expect((await run(address, "no.such.Service")).code).toBe(1);
    const closed = new grpc.Server();
    const port = await new Promise<number>((resolve, reject) =>
      closed.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
    );
    closed.forceShutdown();
    const r = await run(`127.0.0.1:${port}`, "", "1000");
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/UNAVAILABLE|DEADLINE_EXCEEDED/);
  });
});
