import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { DEPLOY, gatewayFacts, keyServiceFacts, PEM_BLOCK, petFacts, read, ROOT } from "../../../testkit/deploy-check/facts.ts";
import { loadCompose } from "../../../testkit/deploy-check/compose-checks.ts";
import { loadManifests, VARIANTS, workload } from "../../../testkit/deploy-check/kustomize.ts";

// What the deploy checks compare against is read right from the code (testkit/deploy-check/facts.ts).
const compose = loadCompose();

describe("what the checks compare against", () => {
  it("reads the processes' variables and ports from the code", () => {
    expect(gatewayFacts.entry).toBe("gateway/main.ts");
    expect(petFacts.entry).toBe("pet-service/main.ts");
    expect(keyServiceFacts.entry).toBe("keys/main.ts");
    expect(gatewayFacts.defaultPort).toBe(8080);
    expect(petFacts.defaultPort).toBe(50051);
    expect(keyServiceFacts.defaultPort).toBe(8081);
    expect([...gatewayFacts.envNames]).toEqual(expect.arrayContaining(["GATEWAY_PORT", "PET_SERVICE_ADDR", "REDIS_URL", "KEYS_URL", "KEYS_SERVICE_TOKEN"]));
    expect([...keyServiceFacts.envNames]).toEqual(expect.arrayContaining(["KEYS_DB", "KEYS_DIR", "KEYS_HOST", "KEYS_PORT", "KEYS_ADMIN_TOKEN", "REDIS_URL"]));
    expect([...petFacts.envNames]).toEqual(expect.arrayContaining(["PET_SERVICE_HOST", "PET_SERVICE_PORT", "PETS_DB"]));
    expect(petFacts.envNames.has("GATEWAY_PORT")).toBe(false);
    expect(keyServiceFacts.envNames.has("KEYS_SERVICE_TOKEN")).toBe(false);
  });

  it("the probed endpoints exist in the code", () => {
    // HTTP paths the gateway registers (ops routes live outside /v1).
    const gatewayText = readdirSync(path.join(ROOT, "gateway"), { recursive: true, encoding: "utf8" })
      .filter((f) => f.endsWith(".ts"))
      .map((f) => read(`gateway/${f}`))
      .join("\n");
    const paths = new Set([...gatewayText.matchAll(/\.get\(\s*["'](\/[a-z]+)["']/g)].map((m) => m[1]));
    expect([...paths]).toEqual(expect.arrayContaining(["/healthz", "/readyz", "/metrics"]));
    // The key service's routes are a table of { method, path } (keys/api/).
    const keysText = readdirSync(path.join(ROOT, "keys/api"), { recursive: true, encoding: "utf8" })
      .filter((f) => f.endsWith(".ts"))
      .map((f) => read(`keys/api/${f}`))
      .join("\n");
    for (const probed of ["/healthz", "/readyz", "/metrics"]) expect(keysText).toMatch(new RegExp(`path: ["']${probed}["']`));
    // The pet service answers grpc.health.v1 for the whole server and for PetService.
    const server = read("pet-service/server.ts");
    expect(server).toMatch(/HealthImplementation/);
    expect(server).toMatch(/\[\s*""\s*,\s*PET_SERVICE_NAME\s*\]/);
  });

  it("parses every YAML file of deploy/ and finds the three processes", () => {
    for (const variant of VARIANTS) {
      const m = loadManifests(variant);
      expect(m.dirs.map((d) => d.dir)).toEqual([variant, "base"]);
      expect(m.dirs[1]!.files).toEqual(["config.yaml", "gateway.yaml", "ingress.yaml", "key-service.yaml", "pet-service.yaml"]);
      for (const facts of [gatewayFacts, petFacts, keyServiceFacts]) expect(workload(m, facts)).toBeDefined();
    }
    expect(Object.keys(compose.services)).toEqual(expect.arrayContaining(["postgres", "redis", "pet-service", "key-service", "gateway-1", "gateway-2"]));
  });

  it("no file under deploy/ holds key material", () => {
    const walk = (dir: string): string[] =>
      readdirSync(dir).flatMap((n) => (statSync(path.join(dir, n)).isDirectory() ? walk(path.join(dir, n)) : [path.join(dir, n)]));
    const leaking = walk(DEPLOY).filter((f) => PEM_BLOCK.test(readFileSync(f, "utf8")));
    expect(leaking).toEqual([]);
  });
});
