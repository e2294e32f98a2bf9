/**
 * deploy/k8s overlays played as pods by `podman kube play`: each overlay rendered (as
 * `kubectl kustomize` renders it), its Deployments run with their ConfigMaps, Secrets and
 * PersistentVolumeClaim, every probe the manifests declare answering, the process inside as
 * uid 1000 under tini, a real key's requests through the `gateway` Service, and each pod stopping
 * with exit status 0 within terminationGracePeriodSeconds.
 *
 * What podman 4.3 (Debian bookworm) cannot run, and what the test does instead (printed too):
 *   - Services: a network alias of the Service's name on the pods its selector matches (what
 *     a headless Service's DNS answers; the gateway's ClusterIP Service likewise).
 *   - Secret objects: Secrets referenced by secretKeyRef become podman secrets; the gateway's
 *     projected key volume (podman has no projected volumes) becomes a hostPath directory holding
 *     exactly the files the projection would (public/<kid>.pem, revoked.json when present).
 *   - Probes: podman turns only livenessProbe into a health check, without named ports or grpc
 *     and needing systemd to schedule it, so they are left out of what podman plays and the
 *     test runs every startup, liveness and readiness probe itself, from inside the pod, on the
 *     pod's address, with the manifest's path, port and gRPC service.
 *   - HorizontalPodAutoscaler, PodDisruptionBudget, Ingress: not run (no controllers). A
 *     Deployment without replicas gets its HPA's minReplicas; the HPA's target, the PDB's
 *     selector and the Ingress's backend are checked against what runs; the rest is
 *     tests/unit/deploy/k8s.test.ts's static checks.
 *   - Namespace: a name prefix of the run on Deployments, ConfigMaps, Secrets and claims.
 *   - containerPort: podman 4.3 publishes each one on every host address (Kubernetes publishes
 *     nothing without hostPort), which also collides between replicas: left out; the probes
 *     resolve named ports from the manifest.
 *   - preStop and terminationGracePeriodSeconds: podman ignores them; the test stops each pod
 *     with the manifest's grace period as the timeout.
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments, stringify } from "yaml";
import { renderOverlay, type Variant } from "../../testkit/deploy-check/kustomize.ts";
import { exec, Made, makeKeys, podman, ROOT, setup, uniqueName, until } from "./podman.ts";

type Obj = { apiVersion: string; kind: string; metadata: { name: string; labels?: Record<string, string> }; [k: string]: any };

// Rendering: kubectl kustomize when installed, else testkit's renderer of the same features
// (tests/unit/deploy/k8s.test.ts holds it to kubectl's output where kubectl is installed).
function render(variant: string): { objects: Obj[]; by: string } {
  const dir = path.join(ROOT, "deploy/k8s", variant);
  const kubectl = spawnSync("kubectl", ["kustomize", dir], { encoding: "utf8" });
  if (kubectl.status === 0) return { objects: parseAllDocuments(kubectl.stdout).map((d) => d.toJS() as Obj), by: "kubectl kustomize" };
  return { objects: renderOverlay(variant as Variant) as Obj[], by: "testkit's renderer (no kubectl)" };
}

const matches = (selector: Record<string, string> | undefined, labels: Record<string, string> | undefined) =>
  !!selector && Object.entries(selector).every(([k, v]) => labels?.[k] === v);

// ---------------------------------------------------------------------------------------------
// The overlays, played
// ---------------------------------------------------------------------------------------------

interface Probe {
  httpGet?: { path: string; port: number | string };
  grpc?: { port: number; service?: string };
  exec?: { command: string[] };
  periodSeconds?: number;
  failureThreshold?: number;
}
const PROBES = ["startupProbe", "livenessProbe", "readinessProbe"] as const;

for (const variant of ["sqlite", "postgres"] as const) {
  describe.skipIf(setup().skip !== null)(`deploy/k8s/${variant} played by podman kube play`, () => {
    const ns = uniqueName(`pet-store-kube-${variant}`);
    const net = ns;
    const made = new Made();
    const notRun: string[] = [];
    let objects: Obj[] = [];
    let keys: Awaited<ReturnType<typeof makeKeys>>;
    let keysVolume: string;
    /** Deployment name → its pods' names and, for each, its container names. */
    const pods = new Map<string, { pod: string; containers: string[] }[]>();
    const find = (kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name);

    /** The gateway's projected volume, as the kubelet would write it: public/<kid>.pem, revoked.json. */
    function materialise(projected: { sources: { secret?: any; configMap?: any }[] }, secrets: Record<string, Record<string, string>>) {
      const dir = mkdtempSync(path.join(tmpdir(), `${ns}-projected-`));
      for (const s of projected.sources) {
        const src = s.secret ? secrets[s.secret.name] : s.configMap ? find("ConfigMap", s.configMap.name)?.data : undefined;
        const optional = (s.secret ?? s.configMap).optional === true;
        if (!src) {
          if (optional) continue;
          throw new Error(`projected source ${JSON.stringify(s)} does not exist`);
        }
        for (const item of (s.secret ?? s.configMap).items ?? Object.keys(src).map((key) => ({ key, path: key }))) {
          if (src[item.key] === undefined) throw new Error(`projected item ${item.key} is not in ${JSON.stringify(Object.keys(src))}`);
          mkdirSync(path.join(dir, path.dirname(item.path)), { recursive: true, mode: 0o755 });
          writeFileSync(path.join(dir, item.path), src[item.key]!, { mode: 0o644 });
        }
      }
      spawnSync("chmod", ["-R", "a+rX", dir]);
      return dir;
    }

    beforeAll(async () => {
      const t = Date.now();
      const rendered = render(variant);
      objects = rendered.objects;
      keys = await makeKeys("business");
      await podman(["network", "create", made.add("network", net)]);

      // The operator's Redis (and PostgreSQL) and Secrets (deploy/README.md, Kubernetes, steps 1 and 3).
      await podman(["run", "-d", "--name", made.add("container", `${ns}-redis`), "--network", `${net}:alias=redis`, "localhost/redis:7-bookworm", "redis-server", "--save", ""]);
      const secrets: Record<string, Record<string, string>> = {
        "gateway-redis": { REDIS_URL: "redis://redis:6379" },
        "gateway-keys": Object.fromEntries(
          readdirSync(path.join(keys.dir, "public")).map((f) => [f, readFileSync(path.join(keys.dir, "public", f), "utf8")]),
        ),
      };
      if (variant === "postgres") {
        const password = randomBytes(12).toString("hex");
        const pg = made.add("container", `${ns}-postgres`);
        await podman(["run", "-d", "--name", pg, "--network", `${net}:alias=postgres`, "-e", "POSTGRES_USER=pets", "-e", `POSTGRES_PASSWORD=${password}`, "-e", "POSTGRES_DB=pets", "localhost/postgres:15-bookworm"]);
        await until("PostgreSQL to accept connections", async () => (await exec(pg, ["pg_isready", "-U", "pets", "-d", "pets"])).code === 0, 60_000);
        secrets["pet-service-db"] = { PETS_DB: `postgres://pets:${password}@postgres:5432/pets` };
      }

      // The kid list patch every operator makes (deploy/README.md, Kubernetes, step 4).
      const gatewayDeployment = find("Deployment", "gateway")!;
      const projected = gatewayDeployment.spec.template.spec.volumes.find((v: any) => v.projected).projected;
      projected.sources[0].secret.items = [{ key: `${keys.kid}.pem`, path: `public/${keys.kid}.pem` }];

      for (const [name, data] of Object.entries(secrets)) {
        if (!objects.some((o) => JSON.stringify(o).includes(`"name":"${name}"`))) continue;
        const encoded = Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString("base64")]));
        // podman 4.3 reads secretKeyRef's secret as a JSON map of base64 values.
        const file = path.join(keys.dir, `${name}.secret.json`);
        writeFileSync(file, JSON.stringify(encoded), { mode: 0o600 });
        await podman(["secret", "create", made.add("secret", `${ns}-${name}`), file]);
      }
      notRun.push("Secret objects: secretKeyRef reads podman secrets; the projected key volume is a hostPath of the projection's files");
      notRun.push("probes (run by the test from inside each pod), lifecycle.preStop, containerPort (podman would publish it on the host)");

      for (const o of objects) {
        if (["HorizontalPodAutoscaler", "PodDisruptionBudget", "Ingress"].includes(o.kind)) notRun.push(`${o.kind}/${o.metadata.name}: no controller (checked against the running pods below and statically by tests/unit/deploy/k8s.test.ts)`);
        if (o.kind === "Service") notRun.push(`Service/${o.metadata.name}: a network alias "${o.metadata.name}" on the pods its selector matches`);
      }

      // Pet service first (the gateways wait for it), then the gateways.
      for (const name of ["pet-service", "gateway"]) {
        const d = structuredClone(find("Deployment", name)!);
        const hpa = objects.find((o) => o.kind === "HorizontalPodAutoscaler" && o.spec.scaleTargetRef.name === name);
        const replicas = d.spec.replicas ?? hpa?.spec.minReplicas ?? 1;
        const spec = d.spec.template.spec;
        const docs: Obj[] = [];
        d.metadata.name = `${ns}-${name}`;
        d.spec.replicas = replicas;
        for (const v of spec.volumes ?? []) {
          if (v.projected) {
            const dir = materialise(v.projected, secrets);
            keysVolume = dir;
            delete v.projected;
            v.hostPath = { path: dir, type: "Directory" };
          }
          if (v.persistentVolumeClaim) {
            const claim = structuredClone(find("PersistentVolumeClaim", v.persistentVolumeClaim.claimName)!);
            claim.metadata.name = made.add("volume", `${ns}-${claim.metadata.name}`);
            v.persistentVolumeClaim.claimName = claim.metadata.name;
            docs.push(claim);
          }
        }
        for (const c of spec.containers) {
          for (const p of PROBES) delete c[p];
          delete c.lifecycle;
          delete c.ports;
          for (const from of c.envFrom ?? []) {
            if (from.configMapRef) {
              const cm = structuredClone(find("ConfigMap", from.configMapRef.name)!);
              cm.metadata.name = from.configMapRef.name = `${ns}-${cm.metadata.name}`;
              docs.push(cm);
            }
          }
          for (const e of c.env ?? []) if (e.valueFrom?.secretKeyRef) e.valueFrom.secretKeyRef.name = `${ns}-${e.valueFrom.secretKeyRef.name}`;
        }
        const service = objects.find((o) => o.kind === "Service" && matches(o.spec.selector, d.spec.template.metadata.labels));
        const file = path.join(keys.dir, `${name}.yaml`);
        writeFileSync(file, [...docs, d].map((o) => stringify(o)).join("---\n"));
        const list: { pod: string; containers: string[] }[] = [];
        for (let i = 0; i < replicas; i++) {
          const pod = made.add("pod", `${ns}-${name}-pod-${i}`);
          list.push({ pod, containers: spec.containers.map((c: { name: string }) => `${pod}-${c.name}`) });
        }
        pods.set(name, list);
        await podman(["kube", "play", ...(service ? ["--network", `${net}:alias=${service.metadata.name}`] : ["--network", net]), file], { timeoutMs: 180_000 });
      }
      console.log(
        `deploy test: ${variant} overlay rendered by ${rendered.by}, played in ${Math.round((Date.now() - t) / 1000)} s: ` +
          [...pods.values()].flat().map((p) => p.pod).join(", ") +
          `\n  not run by podman ${(await podman(["version", "--format", "{{.Client.Version}}"])).stdout.trim()}:\n    ` +
          notRun.join("\n    "),
      );
    });

    afterAll(async () => {
      const failures = await made.removeAll();
      keys?.cleanup();
      if (keysVolume) rmSync(keysVolume, { recursive: true, force: true });
      expect(failures).toEqual([]);
    });

    /** A probe as the kubelet runs it, from inside the pod, on the pod's address. */
    async function probe(container: string, p: Probe, ports: { name: string; containerPort: number }[]): Promise<boolean> {
      const ip = (await podman(["inspect", "--format", `{{(index .NetworkSettings.Networks "${net}").IPAddress}}`, container])).stdout.trim();
      if (p.httpGet) {
        const port = typeof p.httpGet.port === "number" ? p.httpGet.port : ports.find((x) => x.name === p.httpGet!.port)!.containerPort;
        const script = `fetch("http://${ip}:${port}${p.httpGet.path}").then((r) => process.exit(r.status >= 200 && r.status < 400 ? 0 : 1), () => process.exit(1))`;
        return (await exec(container, ["node", "-e", script])).code === 0;
      }
      if (p.grpc) return (await exec(container, ["node", "deploy/grpc-health-check.mjs", `${ip}:${p.grpc.port}`, p.grpc.service ?? ""])).code === 0;
      if (p.exec) return (await exec(container, p.exec.command)).code === 0;
      throw new Error(`probe ${JSON.stringify(p)}: no handler`);
    }

    it("answers every probe the manifests declare (startup, then liveness and readiness)", async () => {
      const answered: string[] = [];
      for (const name of ["pet-service", "gateway"]) {
        const spec = find("Deployment", name)!.spec.template.spec;
        for (const { pod } of pods.get(name)!) {
          for (const c of spec.containers) {
            const container = `${pod}-${c.name}`;
            for (const kind of PROBES) {
              const p = c[kind] as Probe | undefined;
              if (!p) continue;
              const budget = kind === "startupProbe" ? (p.periodSeconds ?? 10) * (p.failureThreshold ?? 3) * 1000 : 60_000;
              await until(`${kind} of ${container} (${JSON.stringify(p.httpGet ?? p.grpc ?? p.exec)})`, () => probe(container, p, c.ports ?? []), budget, 1_000);
              answered.push(`${container} ${kind}`);
            }
          }
        }
      }
      expect(answered.length).toBeGreaterThanOrEqual(6);
    });

    it("runs node as uid 1000 under tini as PID 1, on a read-only root file system", async () => {
      for (const list of pods.values()) {
        for (const { containers } of list) {
          for (const c of containers) {
            const out = await exec(c, ["sh", "-c", 'id -u; tr "\\0" " " </proc/1/cmdline; echo; touch /app/x 2>/dev/null && echo root-fs-writable; touch /tmp/x && echo tmp-writable']);
            expect(out.stdout.split("\n").slice(0, 3)).toEqual(["1000", expect.stringMatching(/^\/usr\/bin\/tini -- node /), "tmp-writable"]);
          }
        }
      }
    });

    it("serves a real key's requests through the gateway Service", async () => {
      // A client pod on the network, as the Ingress controller: the Service name `gateway`.
      const gatewayService = objects.find((o) => o.kind === "Service" && o.metadata.name === "gateway")!;
      const port = gatewayService.spec.ports[0].port as number;
      const script = `
        const base = "http://gateway:${port}/v1/pets", auth = { authorization: "Bearer " + process.env.KEY };
        const c = await fetch(base, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ name: "Kube", categoryId: 3 }) });
        const pet = await c.json();
        const l = await fetch(base + "?limit=100", { headers: auth });
        const ids = (await l.json()).map((p) => p.id);
        const anon = await fetch(base);
        console.log(JSON.stringify({ create: c.status, list: l.status, listed: ids.includes(pet.id), anonymous: anon.status }));`;
      const out = await podman(["run", "--rm", "--network", net, "-e", `KEY=${keys.key}`, "localhost/pet-store-api:local", "node", "--input-type=module", "-e", script]);
      expect(JSON.parse(out.stdout)).toEqual({ create: 201, list: 200, listed: true, anonymous: 401 });
    });

    it("points its HorizontalPodAutoscalers, PodDisruptionBudgets and Ingress at what runs", async () => {
      for (const o of objects) {
        if (o.kind === "HorizontalPodAutoscaler") expect(pods.has(o.spec.scaleTargetRef.name)).toBe(true);
        if (o.kind === "PodDisruptionBudget") {
          const labels = JSON.parse((await podman(["pod", "inspect", "--format", "{{json .Labels}}", pods.get(o.metadata.name)![0]!.pod])).stdout) as Record<string, string>;
          expect(matches(o.spec.selector.matchLabels, labels)).toBe(true);
        }
        if (o.kind === "Ingress") {
          for (const p of o.spec.rules[0].http.paths) expect(find("Service", p.backend.service.name)).toBeDefined();
        }
      }
    });

    it("stops every pod within terminationGracePeriodSeconds, each container with exit status 0", async () => {
      const stops: string[] = [];
      for (const name of ["gateway", "pet-service"]) {
        const grace = find("Deployment", name)!.spec.template.spec.terminationGracePeriodSeconds as number;
        for (const { pod, containers } of pods.get(name)!) {
          const t = Date.now();
          await podman(["pod", "stop", "-t", String(grace), pod], { timeoutMs: (grace + 30) * 1000 });
          const seconds = (Date.now() - t) / 1000;
          for (const c of containers) {
            expect({ c, exit: (await podman(["inspect", "--format", "{{.State.ExitCode}}", c])).stdout.trim() }).toEqual({ c, exit: "0" });
          }
          expect(seconds).toBeLessThan(grace);
          stops.push(`${pod} ${seconds.toFixed(1)} s`);
        }
      }
      console.log(`deploy test: ${variant} pods stopped: ${stops.join(", ")}`);
    });
  });
}
