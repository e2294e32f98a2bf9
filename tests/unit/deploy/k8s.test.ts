import { spawnSync } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { gatewayFacts, K8S, keyServiceFacts, petFacts, type Check } from "../../../testkit/deploy-check/facts.ts";
import { k8sChecks } from "../../../testkit/deploy-check/k8s-checks.ts";
import { clone, find, loadManifests, VARIANTS, workload, type K8sObject, type Manifests, type Variant } from "../../../testkit/deploy-check/kustomize.ts";

// The Kubernetes manifests (both overlays, rendered as kubectl kustomize does) agree with the code,
// and the checks catch plausible mistakes.
const rendered: Record<Variant, Manifests> = { postgres: loadManifests("postgres"), sqlite: loadManifests("sqlite") };
const allProblems = <T>(checks: Record<string, Check<T>>, input: T) => Object.values(checks).flatMap((c) => c(input));

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

describe("the Kubernetes checks catch mistakes", () => {
  const k8s = (mutate: (m: Manifests) => void, variant: Variant = "sqlite") => {
    const m = clone(rendered[variant]);
    mutate(m);
    return allProblems(k8sChecks, m);
  };
  const cm = (m: Manifests, name: string) => find(m, "ConfigMap", name)!.data!;
  const gw = (m: Manifests) => workload(m, gatewayFacts)!;
  const pet = (m: Manifests) => workload(m, petFacts)!;
  const keys = (m: Manifests) => workload(m, keyServiceFacts)!;
  const ingressTo = (service: string, path: string) => ({ path, pathType: "Prefix", backend: { service: { name: service, port: { name: "http" } } } });

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
    ["public keys mounted off KEYS_DIR/public", (m) => void (keys(m).container.volumeMounts!.find((v) => v.name === "public-keys")!.mountPath = "/app/key-pairs/pub"), /nothing mounts a Secret at \/app\/key-pairs\/public/],
    ["KEYS_DIR elsewhere than the keys mount", (m) => void (cm(m, "key-service-config").KEYS_DIR = "/etc/keys"), /KEYS_DIR \/etc\/keys must be an emptyDir/],
    ["KEYS_DIR over the image's code", (m) => void (cm(m, "key-service-config").KEYS_DIR = "/app/keys"), /would hide the image's sources/],
    ["signing keys listed by kid", (m) => void (keys(m).pod.spec.volumes!.find((v) => v.name === "signing-keys")!.secret!.items = [{ key: "active", path: "active" }]), /mount it whole/],
    ["the signing keys mounted into a gateway", (m) => void gw(m).pod.spec.volumes!.push({ name: "keys", secret: { secretName: "key-service-signing-keys" } }), /gateway: mounts no keys/],
    ["the key service in the Ingress", (m) => void find(m, "Ingress", "gateway")!.spec!.rules![0]!.http!.paths.push(ingressTo("key-service", "/v1/keys")), /routes \/v1\/keys to the key service/],
    ["a key-service Service of type LoadBalancer", (m) => void (find(m, "Service", "key-service")!.spec!.type = "LoadBalancer"), /must be ClusterIP/],
    ["gateways pointed elsewhere than the key service", (m) => void (cm(m, "gateway-config").KEYS_URL = "http://keys:8081"), /KEYS_URL=http:\/\/keys:8081 \(want http:\/\/key-service:8081\)/],
    ["a key-service readiness probe on /healthz", (m) => void (keys(m).container.readinessProbe!.httpGet!.path = "/healthz"), /key-service readinessProbe/],
    ["a key service without resources", (m) => void delete keys(m).container.resources, /key-service: resources.requests needs cpu and memory/],
    ["the admin token as plain text", (m) => void (keys(m).container.env = keys(m).container.env!.map((e) => (e.name === "KEYS_ADMIN_TOKEN" ? { name: e.name, value: "pskadm_x" } : e))), /key-service KEYS_ADMIN_TOKEN must come from a Secret/],
    ["the gateway's token as plain text", (m) => void (gw(m).container.env = gw(m).container.env!.map((e) => (e.name === "KEYS_SERVICE_TOKEN" ? { name: e.name, value: "pskadm_x" } : e))), /gateway KEYS_SERVICE_TOKEN must come from a Secret/],
    ["an autoscaled key service", (m) => void m.objects.push({ ...structuredClone(find(m, "HorizontalPodAutoscaler", "gateway")!), metadata: { name: "key-service" }, spec: { ...structuredClone(find(m, "HorizontalPodAutoscaler", "gateway")!.spec), scaleTargetRef: { apiVersion: "apps/v1", kind: "Deployment", name: "key-service" } } }), /key-service: 1 HPAs/],
    ["two key-service replicas on one SQLite file", (m) => void (keys(m).deployment.spec!.replicas = 2), /key-service Deployment replicas 2 \(want 1/],
    ["a private key in a Secret", (m) => void (find(m, "Secret", "key-service-signing-keys")!.stringData!["x.pem"] = "-----BEGIN PRIVATE KEY-----"), /key material/],
    ["a REDIS_URL set as plain text", (m) => void (gw(m).container.env = [{ name: "REDIS_URL", value: "redis://r:6379" }]), /gateway REDIS_URL must come from a Secret/],
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
    ["one key-service replica", (m) => void (keys(m).deployment.spec!.replicas = 1), /key-service replicas 1 \(want 2 or more/],
    ["KEYS_DB a SQLite path", (m) => void (find(m, "Secret", "key-service-db")!.stringData!.KEYS_DB = "/app/data/REPLACE_WITH.sqlite"), /postgres: KEYS_DB \/app\/data\/REPLACE_WITH.sqlite is not a postgres:\/\/ URL/],
  ])("postgres: %s", (_name, mutate, message) => {
    expect(k8s(mutate, "postgres").join("\n")).toMatch(message);
  });
});
