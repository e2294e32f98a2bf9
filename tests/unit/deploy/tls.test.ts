/**
 * deploy/'s TLS on the hop agrees with the code: deploy/compose.tls.yaml (over compose.yaml) and
 * the Kubernetes component deploy/k8s/components/tls set only variables the processes read, point
 * them at files of the volume they mount (a whole directory or Secret: rotation shows), give each
 * process its own certificate, and check the pet service's health in TLS.
 * (deploy/grpc-health-check.mjs over mTLS: tests/integration/pet-service/tls.test.ts.)
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { GATEWAY_ENV } from "../../../gateway/config.ts";
import { PET_SERVICE_ENV } from "../../../pet-service/config.ts";

const ROOT = path.resolve(import.meta.dirname, "../../..");
const read = (rel: string) => parseYaml(readFileSync(path.join(ROOT, rel), "utf8"), { merge: true }) as unknown;
const READS: Record<string, Set<string>> = { gateway: new Set(Object.keys(GATEWAY_ENV.shape)), "pet-service": new Set(Object.keys(PET_SERVICE_ENV.shape)) };
const TLS_FILES: Record<string, string[]> = {
  gateway: ["PET_SERVICE_TLS_CA", "PET_SERVICE_TLS_CLIENT_CERT", "PET_SERVICE_TLS_CLIENT_KEY"],
  "pet-service": ["PET_SERVICE_TLS_CERT", "PET_SERVICE_TLS_KEY", "PET_SERVICE_TLS_CLIENT_CA"],
};
const processOf = (service: string) => (service.startsWith("gateway") ? "gateway" : "pet-service");

describe("deploy/compose.tls.yaml", () => {
  type Service = { environment?: Record<string, string>; volumes?: { type: string; source: string; target: string; read_only?: boolean }[] };
  const base = read("deploy/compose.yaml") as { services: Record<string, Service> };
  const tls = read("deploy/compose.tls.yaml") as { services: Record<string, Service> };

  it("adds mTLS to the pet service and both gateways of compose.yaml, each with its own certificate directory mounted whole and read-only", () => {
    expect(Object.keys(tls.services).sort()).toEqual(["gateway-1", "gateway-2", "pet-service"]);
    const sources = new Map<string, string>();
    for (const [name, service] of Object.entries(tls.services)) {
      expect(base.services[name], name).toBeDefined();
      const env = service.environment ?? {};
      const proc = processOf(name);
      expect(Object.keys(env).sort()).toEqual([...TLS_FILES[proc]!].sort());
      for (const variable of Object.keys(env)) expect(READS[proc]!.has(variable), variable).toBe(true);
      const mount = service.volumes?.find((v) => Object.values(env).every((file) => file.startsWith(`${v.target}/`)));
      expect(mount, `${name}: a volume holding every TLS file`).toMatchObject({ type: "bind", read_only: true });
      sources.set(proc, mount!.source);
    }
    // The gateway never sees the pet service's private key, nor the other way round.
    expect(sources.get("gateway")).not.toBe(sources.get("pet-service"));
  });
});

describe("deploy/k8s/components/tls", () => {
  type Op = { op: string; path: string; value?: unknown };
  const component = read("deploy/k8s/components/tls/kustomization.yaml") as { kind: string; patches: { target: { kind: string; name: string }; patch: string }[] };
  const ops = (kind: string, name: string) => component.patches.filter((p) => p.target.kind === kind && p.target.name === name).flatMap((p) => parseYaml(p.patch) as Op[]);

  it("is a kustomize Component that sets only variables each process reads, naming files of the Secret it mounts whole", () => {
    expect(component.kind).toBe("Component");
    for (const proc of ["gateway", "pet-service"]) {
      const env = Object.fromEntries(ops("ConfigMap", `${proc}-config`).map((o) => [o.path.replace("/data/", ""), String(o.value)]));
      expect(Object.keys(env).sort()).toEqual([...TLS_FILES[proc]!].sort());
      for (const variable of Object.keys(env)) expect(READS[proc]!.has(variable)).toBe(true);
      const deployment = ops("Deployment", proc);
      const volume = deployment.find((o) => o.path === "/spec/template/spec/volumes/-")?.value as { name: string; secret?: { secretName: string } };
      expect(volume.secret?.secretName).toBe(`${proc}-tls`);
      const mount = deployment.find((o) => o.path === "/spec/template/spec/containers/0/volumeMounts/-")?.value as { name: string; mountPath: string; subPath?: string; readOnly?: boolean };
      expect(mount).toEqual({ name: volume.name, mountPath: "/app/tls", readOnly: true });
      for (const file of Object.values(env)) expect(file.startsWith(`${mount.mountPath}/`)).toBe(true);
    }
  });

  it("probes the pet service with the image's TLS health check (the kubelet's grpc probes speak no TLS)", () => {
    const probes = ops("Deployment", "pet-service").filter((o) => /Probe$/.test(o.path));
    expect(probes.map((o) => o.path.split("/").pop()).sort()).toEqual(["livenessProbe", "readinessProbe", "startupProbe"]);
    for (const probe of probes) {
      const command = (probe.value as { exec: { command: string[] } }).exec.command;
      expect(command.slice(0, 3)).toEqual(["node", "deploy/grpc-health-check.mjs", "127.0.0.1:50051"]);
      if (probe.path.endsWith("readinessProbe")) expect(command[3]).toBe("petstore.v1.PetService");
    }
  });
});
