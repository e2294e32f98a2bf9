/** Checks of the rendered Kubernetes manifests against the code; each returns the problems it finds. */
import { existsSync } from "node:fs";
import path from "node:path";
import { privateKeyDir, publicKeyDir } from "../../lib/api-key-format.ts";
import { GATEWAY_ENV, shutdownDeadlineMs } from "../../gateway/config.ts";
import { parseRedisUrl } from "../../lib/redis-client.ts";
import { isPostgresUrl } from "../../pet-service/store/pets-db-url.ts";
import { PET_SERVICE_NAME } from "../../proto/load.ts";
import { ROOT, PUBLIC_PATHS, gatewayFacts, petFacts, keyServiceFacts, FACTS, effectivePort, PEM_BLOCK, type Check } from "./facts.ts";
import { type Labels, type Probe, type K8sObject, type Manifests, subset, find, workload } from "./kustomize.ts";

/** The container port each process listens on, by name. */
const PORT_NAME = { gateway: "http", "pet-service": "grpc", "key-service": "http" } as const;

export const k8sChecks: Record<string, Check<Manifests>> = {
  "every object is namespace-agnostic, and each kustomization lists every manifest beside it": (m) => {
    const problems = m.objects.filter((o) => o.metadata.namespace).map((o) => `${o.kind}/${o.metadata.name} sets a namespace`);
    for (const { dir, resources, files } of m.dirs) {
      const listed = resources.filter((r) => /\.ya?ml$/.test(r)).sort();
      if (JSON.stringify(listed) !== JSON.stringify(files)) problems.push(`${dir}/kustomization.yaml resources ${JSON.stringify(listed)} ≠ ${JSON.stringify(files)}`);
    }
    return problems;
  },

  "each process has a Deployment, Service and PDB (and, but for the key service, an HPA) whose selectors match its pods (and only its pods)": (m) => {
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
      // The key service's count is the overlay's: issuing keys is not on the request path.
      const wantHpas = f === keyServiceFacts ? 0 : 1;
      if (hpas.length !== wantHpas) problems.push(`${f.id}: ${hpas.length} HPAs target Deployment/${w.deployment.metadata.name} (want ${wantHpas})`);
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

  "scaling: the key service runs 2 replicas on PostgreSQL, one writer on SQLite": (m) => {
    const w = workload(m, keyServiceFacts);
    if (!w) return ["no key-service Deployment"];
    const problems: string[] = [];
    const db = w.env.KEYS_DB ?? "";
    const { replicas, strategy } = w.deployment.spec ?? {};
    if (m.variant === "postgres") {
      if (!isPostgresUrl(db)) problems.push(`postgres: KEYS_DB ${db} is not a postgres:// URL`);
      if (w.container.env?.find((e) => e.name === "KEYS_DB")?.valueFrom?.secretKeyRef === undefined) problems.push("postgres: KEYS_DB must come from a Secret (the URL holds a password)");
      if (!(replicas !== undefined && replicas >= 2)) problems.push(`postgres: key-service replicas ${replicas} (want 2 or more: replicas share the registry)`);
      if (strategy?.type !== "RollingUpdate") problems.push(`postgres: key-service strategy ${strategy?.type} (want RollingUpdate)`);
    } else {
      if (replicas !== 1) problems.push(`key-service Deployment replicas ${replicas} (want 1: one SQLite writer)`);
      if (strategy?.type !== "Recreate") problems.push(`key-service strategy ${strategy?.type} (want Recreate)`);
      const mount = w.container.volumeMounts?.find((v) => v.mountPath === path.posix.dirname(db));
      const claim = w.pod.spec.volumes?.find((v) => v.name === mount?.name)?.persistentVolumeClaim?.claimName;
      const pvc = claim ? find(m, "PersistentVolumeClaim", claim) : undefined;
      if (!path.posix.isAbsolute(db) || !pvc) problems.push(`KEYS_DB ${db} must be an absolute path on a PersistentVolumeClaim mount`);
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
      if (w.portNumber(PORT_NAME[f.id]) !== listen) {
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
      // The gateways reach the key service through its Service, which nothing exposes.
      const keys = workload(m, keyServiceFacts);
      const keySvc = keys && m.objects.find((o) => o.kind === "Service" && subset(o.spec?.selector, keys.pod.metadata.labels));
      const keySvcPort = keySvc?.spec?.ports?.find((p) => keys!.portNumber(p.targetPort ?? p.port) === effectivePort(keyServiceFacts, keys!.env));
      if (gw.env.KEYS_URL !== `http://${keySvc?.metadata.name}:${keySvcPort?.port}`) problems.push(`gateway KEYS_URL=${gw.env.KEYS_URL} (want http://${keySvc?.metadata.name}:${keySvcPort?.port})`);
      if (keySvc && (keySvc.spec?.type ?? "ClusterIP") !== "ClusterIP") problems.push(`Service/${keySvc.metadata.name} must be ClusterIP: the admin API is internal`);
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
          if (p.backend.service.name === keySvc?.metadata.name) problems.push(`Ingress/${ing.metadata.name} routes ${p.path} to the key service (the admin API is never public)`);
          else if (p.backend.service.name !== gwSvc?.metadata.name || !port) problems.push(`Ingress path ${p.path} does not reach the gateway Service`);
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
    // Passwords and tokens: from Secrets, never in a manifest.
    for (const [f, name] of [[gatewayFacts, "REDIS_URL"], [gatewayFacts, "KEYS_SERVICE_TOKEN"], [keyServiceFacts, "REDIS_URL"], [keyServiceFacts, "KEYS_ADMIN_TOKEN"]] as const) {
      const w = workload(m, f);
      if (w && w.container.env?.find((e) => e.name === name)?.valueFrom?.secretKeyRef === undefined) problems.push(`${f.id} ${name} must come from a Secret`);
    }
    const gw = workload(m, gatewayFacts);
    if (gw?.env.REDIS_URL) {
      try {
        parseRedisUrl(gw.env.REDIS_URL);
      } catch (err) {
        problems.push(`REDIS_URL: ${(err as Error).message}`);
      }
    }
    return problems;
  },

  "HTTP probes (gateway, key service): liveness GET /healthz, readiness GET /readyz on its port; metrics scraped there": (m) => {
    const problems: string[] = [];
    for (const f of [gatewayFacts, keyServiceFacts]) {
      const w = workload(m, f);
      if (!w) {
        problems.push(`no ${f.id} Deployment`);
        continue;
      }
      const listen = effectivePort(f, w.env);
      const http = (name: string, probe: Probe | undefined, wantPath: string) => {
        if (probe?.httpGet?.path !== wantPath || w.portNumber(probe.httpGet.port) !== listen) {
          problems.push(`${f.id} ${name}: ${JSON.stringify(probe)} (want GET ${wantPath} on ${listen})`);
        }
      };
      http("livenessProbe", w.container.livenessProbe, "/healthz");
      http("readinessProbe", w.container.readinessProbe, "/readyz");
      if (w.container.startupProbe) http("startupProbe", w.container.startupProbe, "/healthz");
      const a = w.pod.metadata.annotations ?? {};
      if (a["prometheus.io/scrape"] !== "true" || Number(a["prometheus.io/port"]) !== listen || a["prometheus.io/path"] !== "/metrics") {
        problems.push(`${f.id} scrape annotations ${JSON.stringify(a)} (want /metrics on ${listen})`);
      }
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

  "keys: only the key service holds the signing pairs, from whole Secrets at KEYS_DIR/private and /public; no key material in a manifest": (m) => {
    const problems: string[] = [];
    const w = workload(m, keyServiceFacts);
    if (!w) return ["no key-service Deployment"];
    const keysDir = w.env.KEYS_DIR ?? "";
    if (!path.posix.isAbsolute(keysDir)) problems.push(`key-service KEYS_DIR=${keysDir} must be absolute`);
    // The image's /app/<dir> holds code: a volume there would hide it.
    if (existsSync(path.join(ROOT, path.posix.relative("/app", keysDir)))) problems.push(`key-service KEYS_DIR=${keysDir} would hide the image's sources`);
    const mountAt = (dir: string) => w.container.volumeMounts?.find((v) => v.mountPath === dir);
    const volumeOf = (dir: string) => w.pod.spec.volumes?.find((v) => v.name === mountAt(dir)?.name);
    // KEYS_DIR itself is written (the pairs' lock file): a scratch volume, the pairs read-only inside it.
    if (!volumeOf(keysDir)?.emptyDir) problems.push(`key-service KEYS_DIR ${keysDir} must be an emptyDir (writable) with the Secrets mounted inside it`);
    for (const dir of [privateKeyDir(keysDir), publicKeyDir(keysDir)]) {
      const secret = volumeOf(dir)?.secret;
      if (!secret) problems.push(`key-service: nothing mounts a Secret at ${dir}`);
      else {
        if (secret.items) problems.push(`Secret ${secret.secretName} at ${dir}: mount it whole (no items), so a rotation needs no manifest change`);
        if (!find(m, "Secret", secret.secretName)) problems.push(`Secret ${secret.secretName} (${dir}) is not in secrets.example.yaml`);
      }
      if (mountAt(dir)?.readOnly !== true || mountAt(dir)?.subPath) problems.push(`key-service: ${dir} must be read-only, without subPath`);
    }
    // The gateways verify with the key service's JWKS: no key file, no KEYS_DIR.
    const gw = workload(m, gatewayFacts);
    if (gw?.env.KEYS_DIR !== undefined || gw?.pod.spec.volumes?.some((v) => v.secret || v.projected || v.configMap)) problems.push("gateway: mounts no keys and has no KEYS_DIR (it follows the key service)");
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
      const deadline = parsed.success ? shutdownDeadlineMs(parsed.data) : NaN;
      if (!(sleep > 0)) problems.push("gateway: a preStop sleep lets endpoint removal propagate before SIGTERM");
      if (!((gw.pod.spec.terminationGracePeriodSeconds ?? 30) * 1000 > sleep * 1000 + deadline)) {
        problems.push(`gateway: terminationGracePeriodSeconds must exceed preStop ${sleep}s + its shutdown deadline ${deadline} ms (SHUTDOWN_DELAY_MS + SHUTDOWN_GRACE_MS + 2 s)`);
      }
    }
    return problems;
  },
};
