import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { GET_PET_DEPRECATION, deprecationHeaders } from "../../../../gateway/http/deprecation.ts";
import { requiredScope } from "../../../../gateway/auth/access.ts";
import { ERRORS } from "../../../../lib/http/errors.ts";
import { STATUS_VALUES } from "../../../../gateway/http/pet-mapping.ts";
import { ROUTES } from "../../../../gateway/http/routes.ts";
import { SELF_SERVICE_ROUTES } from "../../../../gateway/usage/me-routes.ts";
import { LIST_LIMIT, NAME_MAX_LENGTH } from "../../../../pet-service/rules.ts";
import {
  HTTP_METHODS,
  openApiDocument as doc,
  recordingFetch,
  resolvePointer,
  UNDESCRIBED_RESPONSES,
  validateAgainstOpenApi,
  validateSchemaAt,
  type OpenApiHeader,
  type OpenApiOperation,
  type OpenApiResponse,
} from "../../../../testkit/openapi-validator.ts";

type JsonObject = Record<string, unknown>;

const escapeToken = (token: string) => token.replaceAll("~", "~0").replaceAll("/", "~1");

/** Every object node of `node` with its JSON pointer. */
function* objects(node: unknown, pointer = ""): Generator<[string, JsonObject]> {
  if (typeof node !== "object" || node === null) return;
  if (!Array.isArray(node)) yield [pointer, node as JsonObject];
  for (const [key, value] of Object.entries(node)) yield* objects(value, `${pointer}/${escapeToken(key)}`);
}

/** Follows `$ref`s (local only). */
function deref<T>(value: unknown): T {
  let current = value;
  while (typeof current === "object" && current !== null && "$ref" in current) current = resolvePointer(String(current.$ref));
  return current as T;
}

function operations(): { path: string; method: string; op: OpenApiOperation }[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    HTTP_METHODS.filter((m) => item[m]).map((method) => ({ path, method, op: item[method]! })),
  );
}

function parameter(op: OpenApiOperation, name: string): { name: string; in: string; required?: boolean; schema: JsonObject } {
  const found = (op.parameters ?? []).map((p) => deref<{ name: string; in: string; schema: JsonObject }>(p)).find((p) => p.name === name);
  if (!found) throw new Error(`no parameter ${name}`);
  return found;
}

const schema = (name: string) => doc.components.schemas![name] as JsonObject & { properties: Record<string, JsonObject> };
const op = (operationId: string) => operations().find((o) => o.op.operationId === operationId)!.op;

/** The headers of a response as its documented examples spell them, plus its example body. */
function exampleOf(response: OpenApiResponse): { headers: Headers; bodyText: string } {
  const headers = new Headers();
  for (const [name, header] of Object.entries(response.headers ?? {})) {
    const example = deref<OpenApiHeader>(header).example;
    if (example !== undefined) headers.set(name, String(example));
  }
  const [mediaType, media] = Object.entries(response.content ?? {})[0] ?? [];
  if (mediaType) headers.set("Content-Type", `${mediaType}; charset=utf-8`);
  return { headers, bodyText: media?.example === undefined ? "" : JSON.stringify(media.example) };
}

const component = (name: string) => deref<OpenApiResponse>({ $ref: `#/components/responses/${name}` });
const undescribed = (name: keyof typeof UNDESCRIBED_RESPONSES) => UNDESCRIBED_RESPONSES[name];

describe("gateway/http/openapi.json", () => {
  it("is an OpenAPI 3.1 description of version 1.0.0 with /v1 servers and global bearer auth", () => {
    expect(doc.openapi).toMatch(/^3\.1\.[0-9]+$/);
    expect(doc.info.title).toBeTruthy();
    expect(doc.info.version).toBe("1.0.0");
    expect(doc.servers?.length).toBeGreaterThanOrEqual(2);
    // The first is relative (OpenAPI: to where the description is served), so "Try it out" on the
    // docs page calls the gateway that served it, whatever its host and port.
    expect(doc.servers?.[0]?.url).toBe("/v1");
    for (const server of doc.servers ?? []) {
      const url = server.url.replace(/\{([^}]+)\}/g, (_, name: string) => server.variables?.[name]?.default ?? "MISSING");
      expect(new URL(url, "http://gateway.test:8080/v1/openapi.json").pathname).toBe("/v1");
    }
    expect(doc.info.contact).toMatchObject({ name: expect.any(String), email: expect.stringContaining("@") });
    expect(doc.info.license).toMatchObject({ name: expect.any(String), url: expect.stringMatching(/^https:\/\//) });
    expect(doc.security).toEqual([{ bearerAuth: [] }]);
    expect(doc.components.securitySchemes!.bearerAuth).toMatchObject({ type: "http", scheme: "bearer", bearerFormat: "JWT" });
  });

  it("names the scope each operation needs, as the gateway enforces it (GET pets:read, POST pets:write; the key's own /me* none)", () => {
    for (const { path, method, op } of operations()) {
      const scopes = SELF_SERVICE_ROUTES.has(`/v1${path}`) ? [] : [requiredScope(method.toUpperCase())];
      expect(op.security, op.operationId).toEqual([{ bearerAuth: scopes }]);
    }
  });

  it("resolves every $ref inside the document", () => {
    const refs = [...objects(doc)].filter(([, node]) => typeof node.$ref === "string").map(([at, node]) => [at, node.$ref as string] as const);
    expect(refs.length).toBeGreaterThan(50);
    const broken = refs.filter(([, ref]) => !ref.startsWith("#/") || resolvePointer(ref) === undefined);
    expect(broken).toEqual([]);
  });

  it("is well-formed: unique operationIds, path parameters match the templates, described responses", () => {
    const ids = operations().map((o) => o.op.operationId);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { path, op } of operations()) {
      const params = (op.parameters ?? []).map((p) => deref<{ name: string; in: string; required?: boolean; schema?: unknown }>(p));
      expect(new Set(params.map((p) => `${p.in}:${p.name}`)).size).toBe(params.length);
      const templateVars = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      const pathParams = params.filter((p) => p.in === "path");
      expect(pathParams.map((p) => p.name).sort()).toEqual(templateVars.sort());
      for (const p of params) {
        expect(p.schema, `${op.operationId} ${p.name}`).toBeDefined();
        if (p.in === "path") expect(p.required).toBe(true);
      }
      expect(Object.keys(op.responses).length).toBeGreaterThan(0);
      for (const [status, response] of Object.entries(op.responses)) {
        expect(status).toMatch(/^([1-5][0-9]{2}|[1-5]XX|default)$/);
        expect(typeof deref<OpenApiResponse>(response).description).toBe("string");
      }
    }
    for (const requirement of doc.security ?? []) {
      for (const name of Object.keys(requirement)) expect(doc.components.securitySchemes).toHaveProperty(name);
    }
  });

  it("has exactly the three operations of the route table and the key's own two, getPet alone deprecated", () => {
    expect(operations().map(({ path, method, op }) => [method, path, op.operationId, op.deprecated ?? false])).toEqual([
      ["get", "/pets", "listPets", false],
      ["post", "/pets", "createPet", false],
      ["get", "/pets/{petId}", "getPet", true],
      ["get", "/me", "getMe", false],
      ["get", "/me/usage", "getMyUsage", false],
    ]);
    for (const route of ROUTES) {
      const path = route.path.replace(/:([A-Za-z]+)/g, "{$1}");
      const described = doc.paths[path]?.[route.method.toLowerCase() as "get" | "post"];
      expect(described?.operationId).toBe(route.operation);
      expect(described?.deprecated ?? false).toBe(Boolean(route.deprecation));
    }
    expect(ROUTES).toHaveLength(operations().length - SELF_SERVICE_ROUTES.size);
    for (const path of SELF_SERVICE_ROUTES) expect(doc.paths[path.slice("/v1".length)]?.get?.security).toEqual([{ bearerAuth: [] }]);
  });

  it("gives no example for values a client must not copy: the server-issued cursor, the single-use Idempotency-Key", () => {
    // The docs page's "Try it out" pre-fills parameters with their examples and sends them: a
    // made-up cursor answers 400, a shared Idempotency-Key 422 on the second different create.
    expect(parameter(op("listPets"), "cursor")).not.toHaveProperty("example");
    expect(parameter(op("createPet"), "Idempotency-Key")).not.toHaveProperty("example");
  });

  it("matches the code registry, the status enum and the pet service's bounds", () => {
    expect(schema("Error").properties.code!.enum).toEqual(Object.keys(ERRORS));
    expect(schema("PetStatus").enum).toEqual(STATUS_VALUES);
    expect(deref(parameter(op("listPets"), "status").schema)).toBe(schema("PetStatus"));

    const limit = parameter(op("listPets"), "limit");
    expect(limit).toMatchObject({ in: "query", required: false });
    expect(limit.schema).toMatchObject({ type: "integer", minimum: 1, maximum: 100, default: 20 });
    expect([limit.schema.minimum, limit.schema.maximum, limit.schema.default]).toEqual([LIST_LIMIT.min, LIST_LIMIT.max, LIST_LIMIT.default]);

    expect(parameter(op("getPet"), "petId").schema).toMatchObject({ type: "integer", format: "int64" });
    expect(parameter(op("createPet"), "Idempotency-Key")).toMatchObject({ in: "header", required: false });
    expect(op("createPet").responses["422"]).toEqual({ $ref: "#/components/responses/IdempotencyKeyReused" });
  });

  it("describes NewPet and Pet as the gateway and the pet service accept and return them", () => {
    const newPet = schema("NewPet");
    expect(newPet.required).toEqual(["name", "categoryId"]);
    expect(newPet.additionalProperties).toBe(false);
    expect(newPet.properties.name).toMatchObject({ type: "string", minLength: 1, maxLength: 100 });
    expect(newPet.properties.name!.maxLength).toBe(NAME_MAX_LENGTH);
    expect(newPet.properties.categoryId).toMatchObject({ type: "integer", format: "int64", minimum: 1 });
    expect(Object.keys(newPet.properties)).toEqual(["name", "categoryId", "status"]);

    const pet = schema("Pet");
    expect(pet.required).toEqual(["id", "name", "categoryId"]);
    expect(pet.properties.id).toMatchObject({ type: "integer", format: "int64" });
    expect(pet.properties.name!.maxLength).toBe(NAME_MAX_LENGTH);

    const body = op("createPet").requestBody as { required?: boolean; content: Record<string, { schema: unknown }> };
    expect(body.required).toBe(true);
    expect(deref(body.content["application/json"]!.schema)).toBe(newPet);
    expect(validateSchemaAt("/components/schemas/NewPet", { name: "Rex", categoryId: 7, id: 1 })).toEqual([expect.stringContaining('"id"')]);
    expect(validateSchemaAt("/components/schemas/NewPet", { name: "   ", categoryId: 7 })).not.toEqual([]);
    expect(validateSchemaAt("/components/schemas/NewPet", { name: "x".repeat(101), categoryId: 7 })).not.toEqual([]);
  });

  it("documents every status each operation can answer, with the matching Error code", () => {
    const statuses = (id: string) => Object.keys(op(id).responses);
    expect(statuses("listPets")).toEqual(["200", "400", "401", "403", "429", "500", "503", "504"]);
    expect(statuses("createPet")).toEqual(["201", "400", "401", "403", "413", "415", "422", "429", "500", "503", "504"]);
    expect(statuses("getPet")).toEqual(["200", "400", "401", "403", "404", "410", "429", "500", "503", "504"]);
    const all = [
      ...operations().flatMap(({ op }) => Object.entries(op.responses)),
      ...Object.entries(doc.components.responses!),
    ];
    type Narrowing = { properties?: { code?: { const?: string; enum?: string[] }; status?: { const?: number } } };
    let checked = 0;
    for (const [status, ref] of all) {
      // An error response is the Error schema narrowed to its code and status, as an allOf (a $ref
      // with sibling keywords reads as a replacement of Error in Prism and many generators).
      const bodySchema = deref<OpenApiResponse>(ref).content?.["application/json"]?.schema as { allOf?: ({ $ref?: string } & Narrowing)[] } | undefined;
      if (!bodySchema?.allOf) continue;
      expect(bodySchema.allOf[0]!.$ref, status).toBe("#/components/schemas/Error");
      const narrowing = bodySchema.allOf[1]!.properties!;
      for (const c of narrowing.code!.enum ?? [narrowing.code!.const!]) expect(ERRORS[c as keyof typeof ERRORS].status).toBe(narrowing.status!.const);
      checked++;
    }
    // Every documented error response (all but 200/201) was checked.
    expect(checked).toBe(all.filter(([status, ref]) => !/^20/.test(status) && deref<OpenApiResponse>(ref).content?.["application/json"]).length);
  });

  it("marks the request id and rate-limit headers required on every response, and the specific ones where they belong", () => {
    const required = (response: unknown) =>
      Object.entries(deref<OpenApiResponse>(response).headers ?? {})
        .filter(([, h]) => deref<OpenApiHeader>(h).required)
        .map(([name]) => name);
    const everywhere = ["X-Request-Id", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit-Policy", "RateLimit"];
    for (const { op } of operations()) {
      for (const [status, response] of Object.entries(op.responses)) {
        const names = required(response);
        expect(names, `${op.operationId} ${status}`).toEqual(expect.arrayContaining(everywhere));
        if (status === "429") expect(names).toContain("Retry-After");
        if (status === "201") expect(names).toContain("Location");
        if (op.operationId === "getPet") expect(names).toEqual(expect.arrayContaining(["Deprecation", "Sunset", "Link"]));
        else expect(names).not.toContain("Deprecation");
      }
    }
    for (const response of Object.values(doc.components.responses!)) expect(required(response)).toEqual(expect.arrayContaining(everywhere));
    expect(required(undescribed("MethodNotAllowed"))).toContain("Allow");
  });

  it("writes the deprecation headers exactly as the gateway does", () => {
    const headers = doc.components.headers as Record<string, OpenApiHeader & { schema: JsonObject }>;
    const gateway = deprecationHeaders(GET_PET_DEPRECATION);
    expect(headers.Sunset!.schema.const).toBe(gateway.Sunset);
    expect(headers.Link!.schema.const).toBe(gateway.Link);
    expect(validateSchemaAt("/components/headers/Deprecation/schema", gateway.Deprecation)).toEqual([]);
  });

  it("documents the plans' quotas and the rate-limit headers on the API", () => {
    const text = doc.info.description ?? "";
    for (const row of ["| Free | 60 | 1,000 |", "| Pro | 300 | 10,000 |", "| Business | 1,000 | 100,000 |", "| Enterprise | custom"]) {
      expect(text).toContain(row);
    }
    expect(text).toMatch(/Every `\/v1` response, errors included, carries the rate-limit headers/);
  });

  it("gives examples that satisfy their own schemas", () => {
    const problems: string[] = [];
    for (const [at, node] of objects(doc)) {
      if (node.example !== undefined && node.schema !== undefined) {
        problems.push(...validateSchemaAt(`${at}/schema`, node.example).map((p) => `${at}: ${p}`));
      }
      if (at.startsWith("/components/schemas/") && Array.isArray(node.examples)) {
        for (const example of node.examples) problems.push(...validateSchemaAt(at, example).map((p) => `${at}: ${p}`));
      }
    }
    expect(problems).toEqual([]);
  });
});

describe("validateAgainstOpenApi", () => {
  const ok = exampleOf(deref(op("createPet").responses["201"]));

  it("accepts every documented response built from the document's own examples", () => {
    for (const { path, method, op } of operations()) {
      for (const [status, response] of Object.entries(op.responses)) {
        const res = exampleOf(deref(response));
        const concrete = path.replace(/\{[^}]+\}/g, "42");
        expect(validateAgainstOpenApi({ method, path: concrete }, { status: Number(status), ...res })).toEqual([]);
      }
    }
  });

  it("accepts int64 ids beyond 2^53, HEAD on GET operations, a trailing slash, and the gateway's real deprecation headers", () => {
    const listed = exampleOf(deref(op("listPets").responses["200"]));
    const big = '[{"id":9223372036854775807,"name":"Big","categoryId":9007199254740993}]';
    expect(validateAgainstOpenApi({ method: "GET", path: "/pets/" }, { status: 200, headers: listed.headers, bodyText: big })).toEqual([]);
    expect(validateAgainstOpenApi({ method: "HEAD", path: "/pets" }, { status: 200, headers: listed.headers, bodyText: "" })).toEqual([]);

    const fetched = exampleOf(deref(op("getPet").responses["200"]));
    for (const [name, value] of Object.entries(deprecationHeaders(GET_PET_DEPRECATION))) fetched.headers.set(name, value);
    expect(validateAgainstOpenApi({ method: "GET", path: "/pets/9223372036854775807" }, { status: 200, ...fetched })).toEqual([]);
  });

  it("accepts 404 on undescribed paths and 405 on undescribed methods when they are proper Error responses", () => {
    expect(validateAgainstOpenApi({ method: "GET", path: "/orders" }, { status: 404, ...exampleOf(undescribed("NotFound")) })).toEqual([]);
    expect(validateAgainstOpenApi({ method: "PUT", path: "/pets/1" }, { status: 405, ...exampleOf(undescribed("MethodNotAllowed")) })).toEqual([]);
    expect(validateAgainstOpenApi({ method: "GET", path: "/orders" }, { status: 401, ...exampleOf(component("Unauthorized")) })).toEqual([]);
  });

  it("catches a wrong body", () => {
    const check = (bodyText: string) => validateAgainstOpenApi({ method: "POST", path: "/pets" }, { status: 201, headers: ok.headers, bodyText });
    expect(check('{"id":"1","name":"Rex","categoryId":7}')).toEqual([expect.stringMatching(/\/id must be integer/)]);
    expect(check('{"id":1,"categoryId":7}')).toEqual([expect.stringMatching(/must have required property 'name'/)]);
    expect(check('{"id":1,"name":"Rex","categoryId":7,"owner":"me"}')).toEqual([expect.stringMatching(/additional properties: "owner"/)]);
    expect(check('{"id":1,"name":"Rex","categoryId":7,"status":"lost"}')).toEqual([expect.stringMatching(/\/status must be equal to one of/)]);
    expect(check("{not json")).toEqual([expect.stringMatching(/body is not JSON/)]);

    const error = exampleOf(component("TooManyRequests"));
    const wrongCode = JSON.stringify({ code: "not_found", message: "x", status: 429 });
    expect(validateAgainstOpenApi({ method: "GET", path: "/pets" }, { status: 429, headers: error.headers, bodyText: wrongCode })).not.toEqual([]);
    const wrongStatus = JSON.stringify({ code: "rate_limited", message: "x", status: 400 });
    expect(validateAgainstOpenApi({ method: "GET", path: "/pets" }, { status: 429, headers: error.headers, bodyText: wrongStatus })).not.toEqual([]);
    const notFound = exampleOf(undescribed("NotFound"));
    expect(validateAgainstOpenApi({ method: "GET", path: "/orders" }, { status: 404, headers: notFound.headers, bodyText: "<h1>Not Found</h1>" })).not.toEqual([]);
  });

  it("catches a wrong Content-Type", () => {
    const headers = new Headers(ok.headers);
    headers.set("Content-Type", "text/html");
    expect(validateAgainstOpenApi({ method: "POST", path: "/pets" }, { status: 201, headers, bodyText: ok.bodyText })).toEqual([
      expect.stringMatching(/Content-Type "text\/html" is not one of application\/json/),
    ]);
  });

  it("catches a missing required header and a malformed one", () => {
    const without = (name: string, res = ok) => {
      const headers = new Headers(res.headers);
      headers.delete(name);
      return { ...res, headers };
    };
    expect(validateAgainstOpenApi({ method: "POST", path: "/pets" }, { status: 201, ...without("Location") })).toEqual([
      "POST /pets → 201: required header Location is missing",
    ]);
    expect(validateAgainstOpenApi({ method: "POST", path: "/pets" }, { status: 201, ...without("X-RateLimit-Remaining") })).toEqual([
      "POST /pets → 201: required header X-RateLimit-Remaining is missing",
    ]);
    const limited = exampleOf(deref(op("getPet").responses["429"]));
    expect(validateAgainstOpenApi({ method: "GET", path: "/pets/1" }, { status: 429, ...without("Retry-After", limited) })).toEqual([
      "GET /pets/1 → 429: required header Retry-After is missing",
    ]);
    expect(validateAgainstOpenApi({ method: "GET", path: "/pets/1" }, { status: 429, ...without("Sunset", limited) })).toEqual([
      "GET /pets/1 → 429: required header Sunset is missing",
    ]);

    const malformed = new Headers(ok.headers);
    malformed.set("X-RateLimit-Reset", "soon");
    expect(validateAgainstOpenApi({ method: "POST", path: "/pets" }, { status: 201, headers: malformed, bodyText: ok.bodyText })).toEqual([
      expect.stringMatching(/header X-RateLimit-Reset: "soon" must be integer/),
    ]);
  });

  it("catches an undocumented status, and undescribed routes answering anything but their errors", () => {
    expect(validateAgainstOpenApi({ method: "GET", path: "/pets" }, { status: 404, ...exampleOf(undescribed("NotFound")) })).toEqual([
      "GET /pets → 404: status 404 is not documented for listPets",
    ]);
    expect(validateAgainstOpenApi({ method: "POST", path: "/pets" }, { status: 410, ...ok })).toEqual([
      "POST /pets → 410: status 410 is not documented for createPet",
    ]);
    expect(validateAgainstOpenApi({ method: "GET", path: "/orders" }, { status: 200, ...ok })).toEqual([
      "GET /orders → 200: undescribed path may only answer 401/404/429",
    ]);
    expect(validateAgainstOpenApi({ method: "DELETE", path: "/pets" }, { status: 404, ...exampleOf(undescribed("NotFound")) })).toEqual([
      "DELETE /pets → 404: undescribed method DELETE on /pets may only answer 401/405/429",
    ]);
  });
});

describe("recordingFetch", () => {
  let server: Server;
  let baseUrl: string;
  const valid = exampleOf(deref(op("listPets").responses["200"]));

  beforeAll(async () => {
    server = createServer((req, res) => {
      const headers = Object.fromEntries(valid.headers);
      const path = new URL(req.url ?? "/", "http://localhost").pathname;
      if (path === "/v1/pets") res.writeHead(200, headers).end('[{"id":1,"name":"Rex","categoryId":7}]');
      else if (path === "/v1/pets/1") {
        // No deprecation headers (and no next-page Link, which only listPets has).
        const { link: _next, ...withoutLink } = headers;
        res.writeHead(200, withoutLink).end('{"id":1,"name":"Rex","categoryId":7}');
      }
      else if (path === "/v1/openapi.json") res.writeHead(200, { "Content-Type": "application/json" }).end("{}");
      else res.writeHead(200, { "Content-Type": "text/plain" }).end("outside the API");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it("validates responses under /v1, hands back readable responses and ignores the rest", async () => {
    const recorder = recordingFetch(baseUrl);
    expect(await (await recorder.fetch(`${baseUrl}/v1/pets?limit=5`)).json()).toEqual([{ id: 1, name: "Rex", categoryId: 7 }]);
    expect(recorder.problems()).toEqual([]);

    expect(await (await recorder.fetch(new URL(`${baseUrl}/v1/pets/1`))).json()).toMatchObject({ id: 1 });
    expect(await (await recorder.fetch(`${baseUrl}/v1/openapi.json`)).text()).toBe("{}");
    expect(await (await recorder.fetch(`${baseUrl}/health`)).text()).toBe("outside the API");
    expect(recorder.problems()).toEqual([
      "GET /pets/1 → 200: required header Deprecation is missing",
      "GET /pets/1 → 200: required header Sunset is missing",
      "GET /pets/1 → 200: required header Link is missing",
    ]);
  });
});
