import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { DEPLOY, gatewayFacts, PEM_BLOCK, petFacts, read, ROOT } from "../../../testkit/deploy-check/facts.ts";
import { loadCompose } from "../../../testkit/deploy-check/compose-checks.ts";
import { loadManifests, VARIANTS, workload } from "../../../testkit/deploy-check/kustomize.ts";

// What the deploy checks compare against is read right from the code (testkit/deploy-check/facts.ts).
const compose = loadCompose();

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
    const gatewayText = readdirSync(path.join(ROOT, "gateway"), { recursive: true, encoding: "utf8" })
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
      const m = loadManifests(variant);
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
