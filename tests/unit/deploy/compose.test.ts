import { describe, expect, it } from "vitest";
import type { Check } from "../../../testkit/deploy-check/facts.ts";
import { composeChecks, loadCompose, type Compose } from "../../../testkit/deploy-check/compose-checks.ts";
import { clone } from "../../../testkit/deploy-check/kustomize.ts";

// deploy/compose.yaml agrees with the code, and the checks catch plausible mistakes.
const compose = loadCompose();
const allProblems = <T>(checks: Record<string, Check<T>>, input: T) => Object.values(checks).flatMap((c) => c(input));

describe("compose.yaml agrees with the code", () => {
  it.each(Object.entries(composeChecks))("%s", (_name, check) => expect(check(compose)).toEqual([]));
});

describe("the compose checks catch mistakes", () => {
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
    ["the signing keys mounted into a gateway", (c) => void c.services["gateway-1"]!.volumes!.push({ type: "bind", source: "../data/keys", target: "/app/keys", read_only: true }), /a gateway mounts no keys/],
    ["a gateway without the key service's URL", (c) => void delete c.services["gateway-2"]!.environment!.KEYS_URL, /KEYS_URL=undefined/],
    ["a gateway's token written in the file", (c) => void (c.services["gateway-1"]!.environment!.KEYS_SERVICE_TOKEN = "pskadm_0123456789012345678901234567890123456789012"), /KEYS_SERVICE_TOKEN must be the operator's/],
    ["a gateway started before the key service is ready", (c) => void delete c.services["gateway-1"]!.depends_on!["key-service"], /depends_on key-service service_healthy/],
    ["the admin API published on every address", (c) => void (c.services["key-service"]!.ports = ["8090:8081"]), /the admin API is never public/],
    ["the key registry off its volume", (c) => void (c.services["key-service"]!.environment!.KEYS_DB = "/tmp/keys.sqlite"), /KEYS_DB \/tmp\/keys.sqlite must be a SQLite file on a named volume/],
    ["two key-service replicas on one SQLite file", (c) => void (c.services["key-service"]!.deploy = { replicas: 2 }), /one key-service service with one replica/],
    ["a generated admin token", (c) => void delete c.services["key-service"]!.environment!.KEYS_ADMIN_TOKEN, /KEYS_ADMIN_TOKEN must be the operator's/],
    ["a key service on loopback inside its container", (c) => void delete c.services["key-service"]!.environment!.KEYS_HOST, /KEYS_HOST must be 0.0.0.0/],
    ["no health condition", (c) => void (c.services["gateway-1"]!.depends_on = { redis: { condition: "service_started" } }), /service_healthy/],
  ])("compose: %s", (_name, mutate, message) => expect(composeWith(mutate)).toMatch(message));
});
