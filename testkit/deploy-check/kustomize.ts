/**
 * The Kubernetes manifests as `kubectl kustomize` renders them (base + an overlay: resources,
 * JSON patches, namespaces of none), with the few object shapes the checks read.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { parse as parseYaml, parseAllDocuments } from "yaml";
import { ROOT, K8S, type ProcessFacts } from "./facts.ts";

// ---------------------------------------------------------------------------------------------
// Kubernetes
// ---------------------------------------------------------------------------------------------

export type Labels = Record<string, string>;
export interface Probe {
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
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Labels; annotations?: Record<string, string> };
  data?: Record<string, string>;
  stringData?: Record<string, string>;
  spec?: {
    replicas?: number;
    strategy?: { type?: string; rollingUpdate?: { maxUnavailable?: number | string; maxSurge?: number | string } };
    clusterIP?: string;
    type?: string;
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
export const VARIANTS = ["postgres", "sqlite"] as const;
export type Variant = (typeof VARIANTS)[number];

interface KustomizationFile {
  resources?: string[];
  patches?: { target: { kind: string; name: string }; patch: string }[];
  images?: { name: string; newName?: string; newTag?: string }[];
}

export interface Manifests {
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

export function loadManifests(variant: Variant): Manifests {
  const { objects, dirs } = renderKustomization(path.join(K8S, variant));
  const secrets = parseYamlFile(path.join(K8S, "secrets.example.yaml"))
    .filter(Boolean)
    .map((doc) => ({ ...(doc as K8sObject), file: "secrets.example.yaml" }));
  return { variant, objects: [...objects, ...secrets], dirs };
}

/** An overlay as `kubectl kustomize deploy/k8s/<variant>` prints it (no example Secrets, no file names). */
export function renderOverlay(variant: Variant): Omit<K8sObject, "file">[] {
  return renderKustomization(path.join(K8S, variant)).objects.map(({ file: _file, ...o }) => o);
}

export const clone = <T>(v: T): T => structuredClone(v);
export const subset = (selector: Labels | undefined, labels: Labels | undefined) =>
  !!selector && Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels?.[k] === v);

export function find(m: Manifests, kind: string, name: string): K8sObject | undefined {
  return m.objects.find((o) => o.kind === kind && o.metadata.name === name);
}

/** The Deployment running `facts.entry`, its main container and the environment it gets. */
export function workload(m: Manifests, facts: ProcessFacts) {
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
