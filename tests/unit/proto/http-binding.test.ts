import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { ROUTES } from "../../../gateway/http/routes.ts";
import { loadPetServiceDefinition, PET_SERVICE_NAME } from "../../../proto/load.ts";

// proto/petstore/v1/http.yaml is the one home of "which HTTP method and path call which RPC":
// the gateway's route table, the OpenAPI description and the bench's grpc-gateway peer must agree with it.
const ROOT = path.resolve(import.meta.dirname, "../../..");
const read = (file: string) => readFileSync(path.join(ROOT, file), "utf8");

interface Param {
  $ref?: string;
  in?: string;
  name?: string;
}

interface HttpRule {
  selector: string;
  get?: string;
  post?: string;
  put?: string;
  patch?: string;
  delete?: string;
  body?: string;
}
const METHODS = ["get", "post", "put", "patch", "delete"] as const;

/** Each rule as method, path (with {field} variables), RPC, and whether the body is the request. */
const binding = (parseYaml(read("proto/petstore/v1/http.yaml")) as { http: { rules: HttpRule[] } }).http.rules.map((rule) => {
  const methods = METHODS.filter((m) => rule[m] !== undefined);
  expect(methods, rule.selector).toHaveLength(1);
  return { rpc: rule.selector, method: methods[0]!.toUpperCase(), path: rule[methods[0]!]!, body: rule.body === "*" };
});

/** A route as the binding would spell it: /v1 + path, `:param` → `{field}`. */
const asBound = (route: (typeof ROUTES)[number]) => ({
  rpc: `${PET_SERVICE_NAME}.${route.rpc}`,
  method: route.method,
  path: `/v1${route.path.replace(/:([A-Za-z]+)/g, (_, param: string) => `{${route.pathFields?.[param] ?? param}}`)}`,
  body: route.hasBody === true,
});

describe("the HTTP binding (proto/petstore/v1/http.yaml)", () => {
  it("binds every PetService RPC exactly once, and nothing else", () => {
    const rpcs = Object.keys(loadPetServiceDefinition()[PET_SERVICE_NAME]!).map((m) => `${PET_SERVICE_NAME}.${m}`);
    expect(binding.map((b) => b.rpc).sort()).toEqual(rpcs.sort());
  });

  it("is the gateway's route table: same methods, paths, RPCs and bodies", () => {
    expect(ROUTES.map(asBound)).toEqual(expect.arrayContaining(binding));
    expect(ROUTES).toHaveLength(binding.length);
    // Each path variable names a field of the RPC's request message.
    const service = loadPetServiceDefinition()[PET_SERVICE_NAME] as Record<string, { requestType: { type: { field: { name: string }[] } } }>;
    for (const route of ROUTES) {
      const fields = service[route.rpc]!.requestType.type.field.map((f) => f.name);
      for (const field of Object.values(route.pathFields ?? {})) expect(fields, `${route.rpc} has no field ${field}`).toContain(field);
    }
  });

  it("is what the OpenAPI description documents: one operation per rule, its path parameters the routes' public names", () => {
    const openapi = JSON.parse(read("gateway/http/openapi.json")) as {
      servers: { url: string }[];
      paths: Record<string, { parameters?: Param[] } & Partial<Record<(typeof METHODS)[number], { operationId?: string; tags?: string[]; parameters?: Param[] }>>>;
      components: { parameters: Record<string, { in: string; name: string }> };
    };
    expect(openapi.servers[0]!.url).toBe("/v1");
    // The pet service's operations (tag `pets`); the others (`me`: the calling key) the gateway answers itself.
    const documented = Object.entries(openapi.paths).flatMap(([p, ops]) =>
      METHODS.flatMap((m) => {
        const op = ops[m];
        return op?.tags?.includes("pets") ? [{ method: m.toUpperCase(), path: `/v1${p}`, operationId: op.operationId, params: op.parameters ?? [] }] : [];
      }),
    );
    expect(documented).toHaveLength(binding.length);
    for (const route of ROUTES) {
      const openapiPath = `/v1${route.path.replace(/:([A-Za-z]+)/g, "{$1}")}`;
      const op = documented.find((d) => d.method === route.method && d.path === openapiPath);
      expect(op, `${route.method} ${openapiPath}`).toBeDefined();
      expect(op!.operationId).toBe(route.operation);
      const pathParams = [...(openapi.paths[openapiPath.slice(3)]!.parameters ?? []), ...op!.params]
        .map((p) => (p.$ref ? openapi.components.parameters[p.$ref.split("/").pop()!]! : p))
        .filter((p) => p.in === "path")
        .map((p) => p.name);
      expect(pathParams.sort()).toEqual(Object.keys(route.pathFields ?? {}).sort());
    }
  });

  it("drives the bench's grpc-gateway peer", () => {
    expect(read("bench/grpc-gateway/build.sh")).toMatch(/grpc_api_configuration="\$root\/proto\/petstore\/v1\/http\.yaml"/);
  });
});
