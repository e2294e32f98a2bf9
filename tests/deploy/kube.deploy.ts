/**
 * deploy/k8s overlays played as pods by `podman kube play`: each overlay rendered (as
 * `kubectl kustomize` renders it), its Deployments run with their ConfigMaps, Secrets and
 * PersistentVolumeClaims, every probe the manifests declare answering, the process inside as
 * uid 1000 under tini, a key made through the key service's admin API (the `key-service` Service,
 * as an operator's port-forward reaches it) serving requests through the `gateway` Service and
 * refused there once revoked, and each pod stopping with exit status 0 within
 * terminationGracePeriodSeconds.
 *
 * What podman 4.3 (Debian bookworm) cannot run, and what the test does instead (printed too):
 *   - Services: a network alias of the Service's name on the pods its selector matches (what
 *     a headless Service's DNS answers; the gateway's ClusterIP Service likewise).
 *   - Secret objects: Secrets referenced by secretKeyRef become podman secrets; a Secret volume
 *     (the key service's signing keys) becomes a hostPath directory holding exactly the files
 *     the kubelet would write (one per key of the Secret).
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
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments, stringify } from "yaml";
import { renderOverlay, type Variant } from "../../testkit/deploy-check/kustomize.ts";
import { exec, Made, makeKeyPair, newAdminToken, podman, ROOT, setup, uniqueName, until } from "./podman.ts";

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
    let keys: Awaited<ReturnType<typeof makeKeyPair>>;
    const hostDirs: string[] = [];
    const adminToken = newAdminToken();
    /** Deployment name → its pods' names and, for each, its container names. */
    const pods = new Map<string, { pod: string; containers: string[] }[]>();
    const find = (kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name);

    /** A Secret volume, as the kubelet would write it: one file per key of the Secret. */
    function materialise(secret: { secretName: string }, secrets: Record<string, Record<string, string>>) {
      const src = secrets[secret.secretName];
      if (!src) throw new Error(`Secret ${secret.secretName} does not exist`);
      const dir = mkdtempSync(path.join(tmpdir(), `${ns}-secret-`));
      hostDirs.push(dir);
      for (const [key, value] of Object.entries(src)) writeFileSync(path.join(dir, key), value, { mode: 0o644 });
      spawnSync("chmod", ["-R", "a+rX", dir]);
      return dir;
    }

    /** Plays one Deployment (its ConfigMaps, claims and Secret volumes) on the test's network. */
    async function play(name: string, secrets: Record<string, Record<string, string>>) {
      const d = structuredClone(find("Deployment", name)!);
      const hpa = objects.find((o) => o.kind === "HorizontalPodAutoscaler" && o.spec.scaleTargetRef.name === name);
      const replicas = d.spec.replicas ?? hpa?.spec.minReplicas ?? 1;
      const spec = d.spec.template.spec;
      const docs: Obj[] = [];
      d.metadata.name = `${ns}-${name}`;
      d.spec.replicas = replicas;
      for (const v of spec.volumes ?? []) {
        if (v.secret) {
          v.hostPath = { path: materialise(v.secret, secrets), type: "Directory" };
          delete v.secret;
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

    /** Secrets referenced by secretKeyRef become podman secrets (a JSON map of base64 values, as podman 4.3 reads them). */
    async function createSecrets(secrets: Record<string, Record<string, string>>) {
      for (const [name, data] of Object.entries(secrets)) {
        if (!objects.some((o) => JSON.stringify(o).includes(`"name":"${name}"`))) continue;
        const encoded = Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString("base64")]));
        const file = path.join(keys.dir, `${name}.secret.json`);
        writeFileSync(file, JSON.stringify(encoded), { mode: 0o600 });
        await podman(["secret", "create", made.add("secret", `${ns}-${name}`), file]);
      }
    }

    /** A client pod on the network (an operator's port-forward, the Ingress controller): runs a module script, prints its JSON. */
    async function client(script: string, env: Record<string, string> = {}) {
      const out = await podman(["run", "--rm", "--network", net, ...Object.entries(env).flatMap(([k, v]) => ["-e", `${k}=${v}`]), "localhost/pet-store-api:local", "node", "--input-type=module", "-e", script]);
      return JSON.parse(out.stdout) as Record<string, unknown>;
    }

    beforeAll(async () => {
      const t = Date.now();
      const rendered = render(variant);
      objects = rendered.objects;
      keys = await makeKeyPair();
      await podman(["network", "create", made.add("network", net)]);

      // The operator's Redis (and PostgreSQL) and Secrets (deploy/README.md, Kubernetes, steps 1 and 3).
      await podman(["run", "-d", "--name", made.add("container", `${ns}-redis`), "--network", `${net}:alias=redis`, "localhost/redis:7-bookworm", "redis-server", "--save", ""]);
      const filesOf = (dir: string) => Object.fromEntries(readdirSync(dir).map((f) => [f, readFileSync(path.join(dir, f), "utf8")]));
      const secrets: Record<string, Record<string, string>> = {
        "gateway-redis": { REDIS_URL: "redis://redis:6379" },
        "key-service-signing-keys": filesOf(path.join(keys.dir, "private")),
        "key-service-public-keys": filesOf(path.join(keys.dir, "public")),
        "key-service-admin": { KEYS_ADMIN_TOKEN: adminToken },
      };
      if (variant === "postgres") {
        const password = randomBytes(12).toString("hex");
        const pg = made.add("container", `${ns}-postgres`);
        await podman(["run", "-d", "--name", pg, "--network", `${net}:alias=postgres`, "-e", "POSTGRES_USER=pets", "-e", `POSTGRES_PASSWORD=${password}`, "-e", "POSTGRES_DB=pets", "localhost/postgres:15-bookworm"]);
        await until("PostgreSQL to accept connections", async () => (await exec(pg, ["pg_isready", "-U", "pets", "-d", "pets"])).code === 0, 60_000);
        // The key registry in a database of its own on the same server.
        await until("the keys database", async () => (await exec(pg, ["psql", "-U", "pets", "-d", "pets", "-c", "CREATE DATABASE keys"])).code === 0, 30_000);
        secrets["pet-service-db"] = { PETS_DB: `postgres://pets:${password}@postgres:5432/pets` };
        secrets["key-service-db"] = { KEYS_DB: `postgres://pets:${password}@postgres:5432/keys` };
      }
      await createSecrets(secrets);
      notRun.push("Secret objects: secretKeyRef reads podman secrets; Secret volumes are hostPaths of their files");
      notRun.push("probes (run by the test from inside each pod), lifecycle.preStop, containerPort (podman would publish it on the host)");

      for (const o of objects) {
        if (["HorizontalPodAutoscaler", "PodDisruptionBudget", "Ingress"].includes(o.kind)) notRun.push(`${o.kind}/${o.metadata.name}: no controller (checked against the running pods below and statically by tests/unit/deploy/k8s.test.ts)`);
        if (o.kind === "Service") notRun.push(`Service/${o.metadata.name}: a network alias "${o.metadata.name}" on the pods its selector matches`);
      }

      // The pet service and the key service first; then the gateways' token, made through the
      // admin API as deploy/README.md says (step 6); then the gateways, which wait for both.
      await play("pet-service", secrets);
      await play("key-service", secrets);
      const gatewayToken = await until(
        "the key service to make the gateways' token",
        async () => {
          const r = await client(
            `const r = await fetch("http://key-service:8081/v1/admin-tokens", { method: "POST", headers: { authorization: "Bearer " + process.env.ADMIN, "content-type": "application/json" }, body: JSON.stringify({ name: "gateway", scopes: ["gateway"] }) });
             console.log(JSON.stringify({ status: r.status, ...(await r.json()) }));`,
            { ADMIN: adminToken },
          ).catch(() => undefined);
          return r?.status === 201 ? r : undefined;
        },
        120_000,
        2_000,
      );
      const gatewaySecrets = { "gateway-key-service": { KEYS_SERVICE_TOKEN: gatewayToken.token as string } };
      await createSecrets(gatewaySecrets);
      await play("gateway", { ...secrets, ...gatewaySecrets });
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
      for (const dir of hostDirs) rmSync(dir, { recursive: true, force: true });
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
      for (const name of ["pet-service", "key-service", "gateway"]) {
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

    it("serves a key made through the admin API through the gateway Service, and refuses it there once revoked", async () => {
      // A client pod on the network: the operator (through a port-forward) at the Service name
      // `key-service`, and the Ingress controller at the Service name `gateway`.
      const gatewayPort = find("Service", "gateway")!.spec.ports[0].port as number;
      const keysPort = find("Service", "key-service")!.spec.ports[0].port as number;
      const script = `
        const admin = "http://key-service:${keysPort}", base = "http://gateway:${gatewayPort}/v1/pets";
        const adminAuth = { authorization: "Bearer " + process.env.ADMIN, "content-type": "application/json" };
        const made = await (await fetch(admin + "/v1/keys", { method: "POST", headers: adminAuth, body: JSON.stringify({ name: "kube", plan: "business" }) })).json();
        const auth = { authorization: "Bearer " + made.key };
        const status = async (init) => (await fetch(base, init)).status;
        let first;
        for (let i = 0; i < 100 && first !== 200; i++) first = await status({ headers: auth }), first !== 200 && (await new Promise((r) => setTimeout(r, 100)));
        const c = await fetch(base, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ name: "Kube", categoryId: 3 }) });
        const pet = await c.json();
        const l = await fetch(base + "?limit=100", { headers: auth });
        const ids = (await l.json()).map((p) => p.id);
        const anon = await status({});
        const revoke = await fetch(admin + "/v1/keys/" + made.id + "/revoke", { method: "POST", headers: adminAuth });
        const t = Date.now();
        let after = 200;
        while (after !== 401 && Date.now() - t < 10000) after = await status({ headers: auth }), after !== 401 && (await new Promise((r) => setTimeout(r, 50)));
        console.log(JSON.stringify({ first, create: c.status, list: l.status, listed: ids.includes(pet.id), anonymous: anon, revoke: revoke.status, revoked: after, ms: Date.now() - t }));`;
      const { ms, ...out } = await client(script, { ADMIN: adminToken });
      console.log(`deploy test: ${variant}: the revoked key refused through the gateway Service ${String(ms)} ms after the admin API answered`);
      expect(out).toEqual({ first: 200, create: 201, list: 200, listed: true, anonymous: 401, revoke: 200, revoked: 401 });
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
      for (const name of ["gateway", "pet-service", "key-service"]) {
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
