import { readFileSync } from "node:fs";
import Ajv2020, { type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { parse } from "lossless-json";

/**
 * Checks HTTP responses against an API description (the public API's, gateway/http/openapi.json, or
 * the key service's admin API, keys/api/openapi.json: testkit/admin-openapi.ts): the path and
 * method resolve to an operation, the status is documented for it, every required header is
 * present and matches its schema, and the body matches the documented media type and schema.
 */

export const OPENAPI_FILE = new URL("../gateway/http/openapi.json", import.meta.url);

type JsonObject = Record<string, unknown>;

interface Reference {
  $ref: string;
}

export interface OpenApiHeader {
  description?: string;
  required?: boolean;
  schema?: JsonObject | Reference;
  example?: unknown;
}

export interface OpenApiResponse {
  description: string;
  headers?: Record<string, OpenApiHeader | Reference>;
  content?: Record<string, { schema?: JsonObject | Reference; example?: unknown }>;
}

export interface OpenApiOperation {
  operationId?: string;
  deprecated?: boolean;
  parameters?: unknown[];
  requestBody?: unknown;
  responses: Record<string, OpenApiResponse | Reference>;
}

export const HTTP_METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];
export type OpenApiPathItem = Partial<Record<HttpMethod, OpenApiOperation>> & { parameters?: unknown[] };

export interface OpenApiDocument {
  openapi: string;
  info: { title: string; version: string; description?: string; contact?: JsonObject; license?: JsonObject };
  servers?: { url: string; variables?: Record<string, { default: string }> }[];
  security?: Record<string, string[]>[];
  paths: Record<string, OpenApiPathItem>;
  components: Record<string, Record<string, unknown>>;
}

export const openApiDocument = JSON.parse(readFileSync(OPENAPI_FILE, "utf8")) as OpenApiDocument;

const SHARED_HEADERS = ["X-Request-Id", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit-Policy", "RateLimit"];

/** An Error response with `code` and `status` fixed and the headers every /v1 response has, in the document's terms. */
function errorResponse(code: string, status: number, message: string, headers: Record<string, OpenApiHeader> = {}): OpenApiResponse {
  return {
    description: `\`${code}\`: ${message}`,
    headers: { ...Object.fromEntries(SHARED_HEADERS.map((name) => [name, { $ref: `#/components/headers/${name}` }])), ...headers },
    content: {
      "application/json": {
        schema: { $ref: "#/components/schemas/Error", type: "object", properties: { code: { const: code }, status: { const: status } } },
        example: { code, message, status },
      },
    },
  };
}

/**
 * What info.description says of requests no operation describes: another path under /v1 answers
 * 404 `not_found`, a described path with another method 405 `method_not_allowed` with `Allow`.
 * OpenAPI has no place for them (as components nothing references they are lint warnings), so
 * they live here, beside the document and checked by the same machinery.
 */
export const UNDESCRIBED_RESPONSES: Readonly<Record<"NotFound" | "MethodNotAllowed", OpenApiResponse>> = {
  NotFound: errorResponse("not_found", 404, "No such resource."),
  MethodNotAllowed: errorResponse("method_not_allowed", 405, "Allowed methods: GET, HEAD, POST.", {
    Allow: { description: "The methods the path has.", required: true, schema: { type: "string", pattern: "^[A-Z]+(, [A-Z]+)*$" }, example: "GET, HEAD, POST" },
  }),
};

const escapeToken = (token: string) => token.replaceAll("~", "~0").replaceAll("/", "~1");

function isReference(value: unknown): value is Reference {
  return typeof value === "object" && value !== null && typeof (value as Reference).$ref === "string";
}

function describeErrors(errors: ErrorObject[] | null | undefined): string {
  return (errors ?? [])
    .map((e) => {
      const params = e.params as { additionalProperty?: string; allowedValues?: unknown[]; allowedValue?: unknown };
      const detail =
        params.additionalProperty !== undefined
          ? `: ${JSON.stringify(params.additionalProperty)}`
          : params.allowedValues !== undefined
            ? `: ${JSON.stringify(params.allowedValues)}`
            : params.allowedValue !== undefined
              ? `: ${JSON.stringify(params.allowedValue)}`
              : "";
      return `${e.instancePath ? `${e.instancePath} ` : ""}${e.message}${detail}`;
    })
    .join("; ");
}

function matchTemplate(template: string, path: string): boolean {
  const want = template.split("/");
  const got = path.split("/");
  return want.length === got.length && want.every((seg, i) => (/^\{[^}]+\}$/.test(seg) ? got[i] !== "" : seg === got[i]));
}

/** Header values are text; a numeric schema describes the number the text spells. */
function headerValue(text: string, type: unknown): unknown {
  if (type === "integer" && /^-?[0-9]+$/.test(text)) return Number(text);
  if (type === "number" && /^-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?$/.test(text)) return Number(text);
  return text;
}

export interface ObservedRequest {
  method: string;
  /** The path after `/v1`, without the query: "/pets/12". */
  path: string;
}

export interface ObservedResponse {
  status: number;
  headers: Headers;
  bodyText: string;
}

/** What a description's checker needs beside the document: where its API lives and what it says of undescribed requests. */
export interface OpenApiSpec {
  document: OpenApiDocument;
  /** The id Ajv knows the document by. */
  documentId: string;
  /** The path prefix of the described paths on the server ("/v1"; "" when they are absolute). */
  apiRoot: string;
  /** Error responses for undescribed requests, reachable as `#/x-undescribed-responses/<name>`. */
  undescribedResponses: Readonly<Record<string, OpenApiResponse>>;
  /** Status → response reference for an undescribed path, and for a described path with another method. */
  undescribedPath: Readonly<Record<string, string>>;
  undescribedMethod: Readonly<Record<string, string>>;
  /** Paths under apiRoot the description deliberately leaves out. */
  notDescribed: ReadonlySet<string>;
}

export interface OpenApiValidator {
  /** The value a local reference (`#/components/...`) points at; undefined when it does not resolve. */
  resolvePointer(ref: string): unknown;
  /** Problems of `value` against the schema at a JSON pointer into the document ("/components/schemas/NewPet"). */
  validateSchemaAt(pointer: string, value: unknown): string[];
  /** The path template a concrete path resolves to; concrete segments win over templated ones. */
  findPathTemplate(path: string): string | undefined;
  /** Problems of one response against the description; empty when it conforms. */
  validateAgainstOpenApi(req: ObservedRequest, res: ObservedResponse): string[];
  /**
   * A fetch that checks every response under `${baseUrl}${apiRoot}` against the description and
   * collects the problems. The caller gets the original Response, unread (the check reads a clone).
   */
  recordingFetch(baseUrl: string): { fetch: typeof fetch; problems(): string[] };
}

const UNDESCRIBED_KEY = "x-undescribed-responses";

export function createOpenApiValidator(spec: OpenApiSpec): OpenApiValidator {
  const checkedDocument = { ...spec.document, [UNDESCRIBED_KEY]: spec.undescribedResponses };

  /** The value a local reference (`#/components/...`) points at; undefined when it does not resolve. */
  function resolvePointer(ref: string): unknown {
    if (!ref.startsWith("#")) return undefined;
    let node: unknown = checkedDocument;
    for (const token of ref.slice(1).split("/").slice(1)) {
      const key = decodeURIComponent(token).replaceAll("~1", "/").replaceAll("~0", "~");
      if (typeof node !== "object" || node === null || !Object.hasOwn(node, key)) return undefined;
      node = (node as JsonObject)[key];
    }
    return node;
  }



  /** Follows `$ref`s to the object itself, and the JSON pointer where it lives (for Ajv). */
  function deref<T>(value: T | Reference, pointer: string): { value: T; pointer: string } {
    let current: unknown = value;
    let at = pointer;
    for (let hops = 0; isReference(current); hops++) {
      if (hops > 20) throw new Error(`reference cycle at ${at}`);
      at = current.$ref.slice(1);
      const next = resolvePointer(current.$ref);
      if (next === undefined) throw new Error(`unresolvable $ref ${current.$ref}`);
      current = next;
    }
    return { value: current as T, pointer: at };
  }

  // The whole document is one schema resource, so `#/components/schemas/...` refs resolve inside it.
  const DOCUMENT_ID = spec.documentId;
  const ajv = new Ajv2020({ allErrors: true, strict: true });
  addFormats(ajv); // includes OpenAPI's int32/int64/float/double
  // OpenAPI's top-level fields are not JSON Schema keywords; declaring them keeps strict mode for real schemas.
  ajv.addVocabulary(["openapi", "info", "jsonSchemaDialect", "servers", "paths", "webhooks", "components", "security", "tags", "externalDocs", UNDESCRIBED_KEY]);
  ajv.addSchema(checkedDocument, DOCUMENT_ID);

  const validators = new Map<string, ValidateFunction>();

  /** A validator for the schema at a JSON pointer into the document. */
  function schemaAt(pointer: string): ValidateFunction {
    let validate = validators.get(pointer);
    if (!validate) {
      const fragment = pointer.split("/").map(encodeURIComponent).join("/");
      validate = ajv.compile({ $ref: `${DOCUMENT_ID}#${fragment}` });
      validators.set(pointer, validate);
    }
    return validate;
  }


  /** Problems of `value` against the schema at a JSON pointer into the document ("/components/schemas/NewPet"). */
  function validateSchemaAt(pointer: string, value: unknown): string[] {
    const validate = schemaAt(pointer);
    return validate(value) ? [] : [describeErrors(validate.errors)];
  }


  /** The path template a concrete path resolves to; concrete segments win over templated ones. */
  function findPathTemplate(path: string): string | undefined {
    // Express routing is not strict: "/pets/" is "/pets".
    const normalized = path.length > 1 ? path.replace(/\/$/, "") : path;
    const templated = (t: string) => (t.match(/\{/g) ?? []).length;
    return Object.keys(spec.document.paths)
      .filter((t) => matchTemplate(t, normalized))
      .sort((a, b) => templated(a) - templated(b))[0];
  }


  /** Problems of one response against the description; empty when it conforms. */
  function validateAgainstOpenApi(req: ObservedRequest, res: ObservedResponse): string[] {
    const method = req.method.toLowerCase();
    const label = `${req.method.toUpperCase()} ${req.path} → ${res.status}`;
    const template = findPathTemplate(req.path);
    const item = template === undefined ? undefined : spec.document.paths[template];
    // HEAD is served by the GET operation unless the description has its own.
    const operation = item && (item[method as HttpMethod] ?? (method === "head" ? item.get : undefined));

    let response: { value: OpenApiResponse; pointer: string };
    if (operation && template !== undefined) {
      const statusKey = [String(res.status), `${String(res.status)[0]}XX`, "default"].find((k) => Object.hasOwn(operation.responses, k));
      if (statusKey === undefined) {
        return [`${label}: status ${res.status} is not documented for ${operation.operationId ?? `${method} ${template}`}`];
      }
      const opMethod = operation === item?.[method as HttpMethod] ? method : "get";
      response = deref(operation.responses[statusKey]!, `/paths/${escapeToken(template)}/${opMethod}/responses/${statusKey}`);
    } else {
      const allowed = item ? spec.undescribedMethod : spec.undescribedPath;
      const ref = allowed[String(res.status)];
      if (ref === undefined) {
        const what = item ? `method ${req.method.toUpperCase()} on ${template}` : "path";
        return [`${label}: undescribed ${what} may only answer ${Object.keys(allowed).join("/")}`];
      }
      response = deref<OpenApiResponse>({ $ref: ref }, "");
    }

    return [
      ...checkHeaders(response.value, response.pointer, res.headers),
      ...checkBody(response.value, response.pointer, res, method === "head"),
    ].map((problem) => `${label}: ${problem}`);
  }

  function checkHeaders(response: OpenApiResponse, pointer: string, headers: Headers): string[] {
    const problems: string[] = [];
    for (const [name, declared] of Object.entries(response.headers ?? {})) {
      if (name.toLowerCase() === "content-type") continue; // OpenAPI ignores it; the media type covers it
      const header = deref(declared, `${pointer}/headers/${escapeToken(name)}`);
      const value = headers.get(name);
      if (value === null) {
        if (header.value.required) problems.push(`required header ${name} is missing`);
        continue;
      }
      if (!header.value.schema) continue;
      const schema = deref(header.value.schema, `${header.pointer}/schema`).value;
      const validate = schemaAt(`${header.pointer}/schema`);
      if (!validate(headerValue(value, schema.type))) {
        problems.push(`header ${name}: ${JSON.stringify(value)} ${describeErrors(validate.errors)}`);
      }
    }
    return problems;
  }


  function checkBody(response: OpenApiResponse, pointer: string, res: ObservedResponse, isHead: boolean): string[] {
    const content = response.content ?? {};
    const mediaTypes = Object.keys(content);
    if (isHead) return res.bodyText === "" ? [] : ["a HEAD response has a body"];
    if (mediaTypes.length === 0) return res.bodyText === "" ? [] : ["the response has a body but none is documented"];

    const contentType = res.headers.get("content-type");
    const mediaType = contentType?.split(";")[0]!.trim().toLowerCase();
    const documented = mediaTypes.find((m) => m.toLowerCase() === mediaType) ?? mediaTypes.find((m) => m === "*/*");
    if (documented === undefined) return [`Content-Type ${JSON.stringify(contentType)} is not one of ${mediaTypes.join(", ")}`];
    if (!content[documented]!.schema) return [];
    if (!/^application\/(.+\+)?json$/.test(mediaType ?? "")) return [];

    let body: unknown;
    try {
      // Numbers become JS numbers for the schema checks; int64 exactness is tested elsewhere.
      body = parse(res.bodyText, null, (digits) => Number(digits));
    } catch (err) {
      return [`the body is not JSON (${(err as Error).message}): ${res.bodyText.slice(0, 200)}`];
    }
    const validate = schemaAt(`${pointer}/content/${escapeToken(documented)}/schema`);
    return validate(body) ? [] : [`body ${describeErrors(validate.errors)}; body was ${res.bodyText.slice(0, 500)}`];
  }


  /**
   * A fetch that checks every response under `${baseUrl}${spec.apiRoot}` against the description and collects
   * the problems. The caller gets the original Response, unread (the check reads a clone).
   */
  function recordingFetch(baseUrl: string): { fetch: typeof fetch; problems(): string[] } {
    const realFetch = globalThis.fetch; // captured, so the wrapper can itself be installed as the global fetch
    const base = new URL(baseUrl);
    const apiRoot = `${base.pathname.replace(/\/+$/, "")}${spec.apiRoot}`;
    const problems: string[] = [];

    const apiPath = (url: URL): string | undefined => {
      if (url.origin !== base.origin) return undefined;
      if (url.pathname === apiRoot || (apiRoot === "" && url.pathname === "/")) return "/";
      return url.pathname.startsWith(`${apiRoot}/`) ? url.pathname.slice(apiRoot.length) : undefined;
    };

    const recording = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const method = (init?.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase();
      const requested = input instanceof Request ? input.url : String(input);
      const res = await realFetch(input, init);
      const path = apiPath(new URL(res.url || requested));
      if (path === undefined || spec.notDescribed.has(path)) return res;
      const bodyText = await res.clone().text();
      problems.push(...validateAgainstOpenApi({ method, path }, { status: res.status, headers: res.headers, bodyText }));
      return res;
    };

    return { fetch: recording as typeof fetch, problems: () => [...problems] };
  }

  return { resolvePointer, validateSchemaAt, findPathTemplate, validateAgainstOpenApi, recordingFetch };
}

/**
 * The public API's checker (gateway/http/openapi.json). Responses to requests no operation
 * describes (info.description): authentication and quotas are checked first, then an unknown path
 * answers 404 and a described path with another method 405. The description itself is left out.
 */
export const { resolvePointer, validateSchemaAt, findPathTemplate, validateAgainstOpenApi, recordingFetch } = createOpenApiValidator({
  document: openApiDocument,
  documentId: "https://petstore.example/v1/openapi.json",
  apiRoot: "/v1",
  undescribedResponses: UNDESCRIBED_RESPONSES,
  undescribedPath: {
    "401": "#/components/responses/Unauthorized",
    "404": `#/${UNDESCRIBED_KEY}/NotFound`,
    "429": "#/components/responses/TooManyRequests",
  },
  undescribedMethod: {
    "401": "#/components/responses/Unauthorized",
    "405": `#/${UNDESCRIBED_KEY}/MethodNotAllowed`,
    "429": "#/components/responses/TooManyRequests",
  },
  notDescribed: new Set(["/openapi.json"]),
});
