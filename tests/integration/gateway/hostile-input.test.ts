import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnGateway, type GatewayProcess } from "../../../testkit/gateway-process.ts";
import { createTestKeys, startGateway, type RunningGateway, type TestKeys } from "../../../testkit/gateway.ts";
import { startPetService, type RunningPetService } from "../../../testkit/pet-service.ts";
import { rawRequest, type RawResponse } from "../../../testkit/raw-http.ts";

// A hostile-input corpus through a real gateway (real HTTP, gRPC and SQLite): every request gets a
// 4xx Error body that reveals nothing of the implementation, and the gateway keeps serving.

let pets: RunningPetService;
let keys: TestKeys;
let key: string;
/** The default body limit (16 KiB), as deployed. */
let gateway: RunningGateway;
/** A 1 MiB body limit: deep nesting reaches the JSON parser instead of stopping at 413. */
let roomy: RunningGateway;

beforeAll(async () => {
  pets = await startPetService();
  keys = await createTestKeys();
  key = await keys.issue({ plan: "enterprise", perMinute: 100_000, perDay: 1_000_000 });
  gateway = await startGateway({ petServiceAddr: pets.address, keys });
  roomy = await startGateway({ petServiceAddr: pets.address, keys, overrides: { bodyLimitBytes: 1024 * 1024 } });
});

afterAll(async () => {
  await gateway?.close();
  await roomy?.close();
  await pets?.stop();
  await keys?.remove();
});

// ---------------------------------------------------------------------------------------------
// Requests, byte for byte

const CRLF = "\r\n";

function request(method: string, target: string, opts: { headers?: string[]; body?: Buffer | string; auth?: boolean } = {}): Buffer {
  const body = opts.body === undefined ? undefined : Buffer.isBuffer(opts.body) ? opts.body : Buffer.from(opts.body, "utf8");
  const lines = [`${method} ${target} HTTP/1.1`, "Host: 127.0.0.1"];
  if (opts.auth !== false) lines.push(`Authorization: Bearer ${key}`);
  lines.push(...(opts.headers ?? []));
  if (body !== undefined && !(opts.headers ?? []).some((h) => /^(content-length|transfer-encoding):/i.test(h))) {
    lines.push(`Content-Length: ${body.length}`);
  }
  lines.push("Connection: close");
  return Buffer.concat([Buffer.from(lines.join(CRLF) + CRLF + CRLF, "latin1"), body ?? Buffer.alloc(0)]);
}

const get = (target: string, headers: string[] = []) => request("GET", target, { headers });
const postPet = (body: Buffer | string, contentType = "application/json", headers: string[] = []) =>
  request("POST", "/v1/pets", { headers: [`Content-Type: ${contentType}`, ...headers], body });
/** A NewPet body with `name` as the given raw JSON-string bytes (between the quotes). */
const nameBytes = (...parts: (string | number[])[]) =>
  Buffer.concat([
    Buffer.from('{"name":"'),
    ...parts.map((p) => (typeof p === "string" ? Buffer.from(p, "latin1") : Buffer.from(p))),
    Buffer.from('","categoryId":1}'),
  ]);

// ---------------------------------------------------------------------------------------------
// What every answer must look like

/** A stack frame, an absolute or source path, a module or SQL: none may reach a client. */
const LEAKS: [string, RegExp][] = [
  ["a stack frame", /\bat\s+\S+\s+\(|\bat\s+\S+:\d+:\d+|\n\s+at\s/],
  ["a file path", /\/work\/|\/src\/|\/home\/|\/tmp\/|node_modules|[\w-]+\.(?:ts|js|mjs|cjs)\b/],
  ["SQL", /\b(?:SELECT|INSERT|UPDATE|DELETE|CREATE TABLE|sqlite3?|SQLITE_\w+)\b/i],
  ["an internal error name", /\b(?:TypeError|RangeError|SyntaxError|ReferenceError|URIError)\b/],
  ["a file's content", /root:x:0:0|"devDependencies"/],
];

function expectNoLeak(res: RawResponse): void {
  for (const [what, pattern] of LEAKS) expect(res.raw, `response reveals ${what}`).not.toMatch(pattern);
}

/** A 4xx (one of `status` when given) with a JSON Error body whose status is the HTTP status. */
function expectErrorBody(res: RawResponse, status?: number | readonly number[], code?: string) {
  if (status !== undefined) expect([status].flat(), res.raw.slice(0, 300)).toContain(res.status);
  expect(res.status).toBeGreaterThanOrEqual(400);
  expect(res.status).toBeLessThan(500);
  expect(res.headers["content-type"]).toMatch(/^application\/json/);
  const body = JSON.parse(res.body) as { code: unknown; message: unknown; status: unknown };
  expect(body).toMatchObject({ code: expect.any(String), message: expect.any(String), status: res.status });
  if (code !== undefined) expect(body.code).toBe(code);
  expectNoLeak(res);
  return body as { code: string; message: string; status: number; details?: { field: string; message: string }[] };
}

interface Case {
  name: string;
  send: () => Buffer;
  status: number | readonly number[];
  code?: string;
  /** A field `details` must name. */
  field?: string;
  /** The 1 MiB-limit gateway instead of the default one. */
  roomy?: boolean;
}

const nested = (depth: number, open = "[", close = "]", inner = "") => open.repeat(depth) + inner + close.repeat(depth);
const HUGE = 5 * 1024 * 1024;

const CORPUS: Case[] = [
  // Size
  { name: "a 5 MB body (Content-Length)", send: () => postPet(`{"name":"${"a".repeat(HUGE)}","categoryId":1}`), status: 413, code: "payload_too_large" },
  {
    name: "a 5 MB chunked body",
    send: () => {
      const chunk = Buffer.alloc(1024 * 1024, "a");
      const chunks = Array.from({ length: 5 }, () => Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from("\r\n")]));
      return request("POST", "/v1/pets", {
        headers: ["Content-Type: application/json", "Transfer-Encoding: chunked"],
        body: Buffer.concat([...chunks, Buffer.from("0\r\n\r\n")]),
      });
    },
    status: 413,
    code: "payload_too_large",
  },
  {
    name: "a gzip bomb (5 MB of zeros, 5 KB on the wire)",
    send: () => postPet(gzipSync(Buffer.alloc(HUGE, 0x20)), "application/json", ["Content-Encoding: gzip"]),
    status: 413,
    code: "payload_too_large",
  },
  { name: "a corrupt gzip body", send: () => postPet("not gzip at all", "application/json", ["Content-Encoding: gzip"]), status: 400, code: "invalid_request" },
  { name: "an unknown Content-Encoding", send: () => postPet('{"name":"a","categoryId":1}', "application/json", ["Content-Encoding: compress"]), status: 415, code: "unsupported_media_type" },

  // Nesting (the JSON parser is recursive)
  { name: "100,000 nested arrays (over the body limit)", send: () => postPet(nested(100_000)), status: 413, code: "payload_too_large" },
  { name: "100,000 nested arrays (within the body limit)", send: () => postPet(nested(100_000)), status: 400, code: "invalid_request", roomy: true },
  { name: "100,000 nested objects (within the body limit)", send: () => postPet(nested(100_000, '{"a":', "}", "1")), status: 400, code: "invalid_request", roomy: true },
  { name: "8,000 nested arrays (within 16 KiB)", send: () => postPet(nested(8_000)), status: 400, code: "invalid_request" },
  { name: "nesting inside a NewPet field", send: () => postPet(`{"name":"a","categoryId":${nested(1000)}}`), status: 400, code: "invalid_request" },
  { name: "an unclosed 100,000-deep array", send: () => postPet("[".repeat(100_000)), status: 400, code: "invalid_request", roomy: true },

  // Prototype pollution
  { name: '"__proto__" in the body', send: () => postPet('{"name":"a","categoryId":1,"__proto__":{"isAdmin":true,"polluted":true}}'), status: 400, field: "__proto__" },
  { name: '"constructor"."prototype" in the body', send: () => postPet('{"name":"a","categoryId":1,"constructor":{"prototype":{"polluted":true}}}'), status: 400, field: "constructor" },
  { name: '"__proto__" as the only key', send: () => postPet('{"__proto__":{"polluted":true}}'), status: 400, field: "__proto__" },
  { name: "a repeated key", send: () => postPet('{"name":"a","categoryId":1,"categoryId":2}'), status: 400, code: "invalid_request" },
  { name: "__proto__ in the query", send: () => get("/v1/pets?__proto__[polluted]=1"), status: 400, code: "invalid_request" },
  { name: "__proto__= in the query", send: () => get("/v1/pets?__proto__=1&constructor=2"), status: 400, field: "__proto__" },

  // NUL, surrogates, UTF-8
  { name: "NUL as \\u0000 in name", send: () => postPet('{"name":"a\\u0000b","categoryId":1}'), status: 400, field: "name" },
  { name: "a raw NUL byte in name", send: () => postPet(nameBytes("a", [0x00], "b")), status: 400, code: "invalid_request" },
  { name: "a raw NUL byte outside strings", send: () => postPet(Buffer.from('{"name":"a",\u0000"categoryId":1}', "latin1")), status: 400, code: "invalid_request" },
  { name: "a lone high surrogate escape (\\ud800)", send: () => postPet('{"name":"a\\ud800b","categoryId":1}'), status: 400, field: "name" },
  { name: "a lone low surrogate escape (\\udc00)", send: () => postPet('{"name":"\\udc00","categoryId":1}'), status: 400, field: "name" },
  { name: "a reversed surrogate pair", send: () => postPet('{"name":"\\udc00\\ud800","categoryId":1}'), status: 400, field: "name" },
  { name: "a lone surrogate in a key", send: () => postPet('{"name":"a","categoryId":1,"\\ud800":1}'), status: 400, code: "invalid_request" },
  { name: "a lone surrogate in status", send: () => postPet('{"name":"a","categoryId":1,"status":"\\ud800"}'), status: 400, field: "status" },
  { name: "CESU-8 surrogate bytes (ED A0 80)", send: () => postPet(nameBytes("a", [0xed, 0xa0, 0x80])), status: 400, code: "invalid_request" },
  { name: "CESU-8 surrogate pair (ED A0 BD ED B8 80)", send: () => postPet(nameBytes([0xed, 0xa0, 0xbd, 0xed, 0xb8, 0x80])), status: 400, code: "invalid_request" },
  { name: "invalid UTF-8 bytes (FF FE)", send: () => postPet(nameBytes([0xff, 0xfe])), status: 400, code: "invalid_request" },
  { name: "an overlong UTF-8 '/' (C0 AF)", send: () => postPet(nameBytes([0xc0, 0xaf])), status: 400, code: "invalid_request" },
  { name: "a truncated UTF-8 sequence (E2 82)", send: () => postPet(nameBytes([0xe2, 0x82])), status: 400, code: "invalid_request" },
  { name: "a code point above U+10FFFF (F4 90 80 80)", send: () => postPet(nameBytes([0xf4, 0x90, 0x80, 0x80])), status: 400, code: "invalid_request" },
  { name: "a UTF-16 body", send: () => postPet(Buffer.from('{"name":"a","categoryId":1}', "utf16le")), status: 400, code: "invalid_request" },

  // Media types
  { name: "text/plain", send: () => postPet('{"name":"a","categoryId":1}', "text/plain"), status: 415, code: "unsupported_media_type" },
  { name: "a form body", send: () => postPet("name=a&categoryId=1", "application/x-www-form-urlencoded"), status: 415, code: "unsupported_media_type" },
  { name: "multipart/form-data", send: () => postPet("--x\r\n\r\n--x--", "multipart/form-data; boundary=x"), status: 415, code: "unsupported_media_type" },
  { name: "application/xml", send: () => postPet("<pet><name>a</name></pet>", "application/xml"), status: 415, code: "unsupported_media_type" },
  { name: "no Content-Type", send: () => request("POST", "/v1/pets", { body: '{"name":"a","categoryId":1}' }), status: 415, code: "unsupported_media_type" },
  { name: "a malformed Content-Type", send: () => postPet('{"name":"a","categoryId":1}', "application/json;;;=="), status: 415, code: "unsupported_media_type" },
  { name: "application/json; charset=utf-16", send: () => postPet('{"name":"a","categoryId":1}', "application/json; charset=utf-16"), status: 415, code: "unsupported_media_type" },
  { name: "application/json; charset=latin1", send: () => postPet('{"name":"a","categoryId":1}', "application/json; charset=latin1"), status: 415, code: "unsupported_media_type" },

  // Query parameters
  { name: "a repeated limit", send: () => get("/v1/pets?limit=1&limit=2"), status: 400, field: "limit" },
  { name: "a repeated status", send: () => get("/v1/pets?status=sold&status=sold"), status: 400, field: "status" },
  { name: "status[]= (would silently drop the filter)", send: () => get("/v1/pets?status[]=sold"), status: 400, field: "status[]" },
  { name: "limit[a]=", send: () => get("/v1/pets?limit[a]=1"), status: 400, field: "limit[a]" },
  { name: "a misspelt parameter", send: () => get("/v1/pets?Status=sold"), status: 400, field: "Status" },
  { name: "2,000 parameters", send: () => get(`/v1/pets?${Array.from({ length: 2000 }, (_, i) => `p${i}=1`).join("&")}`), status: 400, code: "invalid_request" },
  { name: "deep brackets", send: () => get(`/v1/pets?a${"[a]".repeat(500)}=1`), status: 400, code: "invalid_request" },
  { name: "a query on the deprecated getPet", send: () => get("/v1/pets/1?x=1"), status: 400, field: "x" },
  { name: "a NUL in a query value", send: () => get("/v1/pets?status=sold%00"), status: 400, field: "status" },

  // Overlong request line and headers (refused by Node's parser before Express)
  { name: "a 32 KB URL", send: () => get(`/v1/pets?x=${"a".repeat(32 * 1024)}`), status: [431], code: "header_fields_too_large" },
  { name: "a 10 KB URL (under the header limit)", send: () => get(`/v1/pets?x=${"a".repeat(10 * 1024)}`), status: 400, field: "x" },
  { name: "a 32 KB header", send: () => get("/v1/pets", [`X-Big: ${"a".repeat(32 * 1024)}`]), status: [431], code: "header_fields_too_large" },
  { name: "3,000 headers", send: () => get("/v1/pets", Array.from({ length: 3000 }, (_, i) => `X-H${i}: 1`)), status: [431], code: "header_fields_too_large" },
  { name: "a 1 MB header", send: () => get("/v1/pets", [`X-Big: ${"a".repeat(1024 * 1024)}`]), status: [431], code: "header_fields_too_large" },

  // Malformed HTTP (refused by Node's parser)
  { name: "a garbage request line", send: () => Buffer.from("GARBAGE\r\n\r\n"), status: 400, code: "invalid_request" },
  { name: "an unknown method", send: () => request("FOO", "/v1/pets"), status: 400, code: "invalid_request" },
  { name: "a control character in a header value", send: () => get("/v1/pets", ["X-Evil: a\u0001b"]), status: 400, code: "invalid_request" },
  {
    name: "Content-Length with Transfer-Encoding (request smuggling)",
    send: () => request("POST", "/v1/pets", { headers: ["Content-Type: application/json", "Content-Length: 4", "Transfer-Encoding: chunked"], body: "0\r\n\r\n" }),
    status: 400,
    code: "invalid_request",
  },
  {
    name: "two Content-Lengths",
    send: () => request("POST", "/v1/pets", { headers: ["Content-Type: application/json", "Content-Length: 2", "Content-Length: 3"], body: "{}" }),
    status: 400,
    code: "invalid_request",
  },
  { name: "a bare LF request", send: () => Buffer.from(`GET /v1/pets HTTP/1.1\nHost: x\nAuthorization: Bearer ${key}\n\n`), status: 400, code: "invalid_request" },

  // Path traversal
  { name: "/v1/pets/../../etc/passwd", send: () => get("/v1/pets/../../etc/passwd"), status: 404, code: "not_found" },
  { name: "/v1/pets/%2e%2e/%2e%2e/etc/passwd", send: () => get("/v1/pets/%2e%2e/%2e%2e/etc/passwd"), status: 404, code: "not_found" },
  { name: "/v1/pets/..%2f..%2fetc%2fpasswd", send: () => get("/v1/pets/..%2f..%2fetc%2fpasswd"), status: 400, field: "petId" },
  { name: "/v1/pets/..%5c..%5cetc%5cpasswd", send: () => get("/v1/pets/..%5c..%5cetc%5cpasswd"), status: 400, field: "petId" },
  { name: "/v1/pets/%252e%252e%252fetc", send: () => get("/v1/pets/%252e%252e%252fetc"), status: 400, field: "petId" },
  { name: "/../../etc/passwd", send: () => get("/../../etc/passwd"), status: 404, code: "not_found" },
  { name: "/v1/../package.json", send: () => get("/v1/../package.json"), status: 404, code: "not_found" },
  { name: "/v1/openapi.json/../../package.json", send: () => get("/v1/openapi.json/../../package.json"), status: 404, code: "not_found" },
  { name: "/v1/%2e%2e/%2e%2e/package.json", send: () => get("/v1/%2e%2e/%2e%2e/package.json"), status: 404, code: "not_found" },

  // Broken percent-encoding
  { name: "/v1/pets/%", send: () => get("/v1/pets/%"), status: 400, code: "invalid_request" },
  { name: "/v1/pets/%zz", send: () => get("/v1/pets/%zz"), status: 400, code: "invalid_request" },
  { name: "/v1/pets/%ff (not UTF-8)", send: () => get("/v1/pets/%ff"), status: 400, code: "invalid_request" },
  { name: "/v1/pets/%ed%a0%80 (an encoded surrogate)", send: () => get("/v1/pets/%ed%a0%80"), status: 400, code: "invalid_request" },
  { name: "?status=%E0%A4%A", send: () => get("/v1/pets?status=%E0%A4%A"), status: 400, field: "status" },
  { name: "?limit=%zz", send: () => get("/v1/pets?limit=%zz"), status: 400, field: "limit" },
  { name: "?%zz=1", send: () => get("/v1/pets?%zz=1"), status: 400, code: "invalid_request" },

  // int64
  { name: "petId 2^63", send: () => get("/v1/pets/9223372036854775808"), status: 400, field: "petId" },
  { name: "petId -2^63-1", send: () => get("/v1/pets/-9223372036854775809"), status: 400, field: "petId" },
  { name: "petId of 1,000 digits", send: () => get(`/v1/pets/${"9".repeat(1000)}`), status: 400, field: "petId" },
  { name: "categoryId 2^63", send: () => postPet('{"name":"a","categoryId":9223372036854775808}'), status: 400, field: "categoryId" },
  { name: "categoryId -2^63-1", send: () => postPet('{"name":"a","categoryId":-9223372036854775809}'), status: 400, field: "categoryId" },
  { name: "categoryId of 10,000 digits", send: () => postPet(`{"name":"a","categoryId":${"9".repeat(10_000)}}`), status: 400, field: "categoryId" },
  { name: "categoryId 1e400", send: () => postPet('{"name":"a","categoryId":1e400}'), status: 400, field: "categoryId" },
  { name: "categoryId -1e400", send: () => postPet('{"name":"a","categoryId":-1e400}'), status: 400, field: "categoryId" },
  { name: "categoryId 1E2", send: () => postPet('{"name":"a","categoryId":1E2}'), status: 400, field: "categoryId" },
  { name: "categoryId 1.0", send: () => postPet('{"name":"a","categoryId":1.0}'), status: 400, field: "categoryId" },
  { name: "categoryId 1e-400", send: () => postPet('{"name":"a","categoryId":1e-400}'), status: 400, field: "categoryId" },
  { name: "categoryId 0x10", send: () => postPet('{"name":"a","categoryId":0x10}'), status: 400, code: "invalid_request" },
  { name: "categoryId 007", send: () => postPet('{"name":"a","categoryId":007}'), status: 400, code: "invalid_request" },
  { name: "categoryId NaN", send: () => postPet('{"name":"a","categoryId":NaN}'), status: 400, code: "invalid_request" },
  { name: "categoryId Infinity", send: () => postPet('{"name":"a","categoryId":Infinity}'), status: 400, code: "invalid_request" },
  { name: "2,000 unknown fields", send: () => postPet(`{${Array.from({ length: 2000 }, (_, i) => `"f${i}":1`).join(",")}}`), status: 400, field: "f0", roomy: true },
  { name: "a 10,000-character field name", send: () => postPet(`{"${"k".repeat(10_000)}":1}`), status: 400, code: "invalid_request" },
  { name: "an id in the body", send: () => postPet('{"id":1,"name":"a","categoryId":1}'), status: 400, field: "id" },
];

describe("the hostile-input corpus", () => {
  it.each(CORPUS)("$name → a 4xx Error body, nothing revealed", async (c) => {
    const res = await rawRequest((c.roomy ? roomy : gateway).url, c.send());
    const body = expectErrorBody(res, c.status, c.code);
    // Error bodies echo at most a little client text, whatever the request held.
    expect(res.body.length).toBeLessThan(4096);
    if (c.field !== undefined) expect(body.details?.map((d) => d.field)).toContain(c.field);
  });

  it("sends the overlong and malformed requests as real clients do, too (fetch)", async () => {
    // fetch cannot send most of the corpus; what it can send gets the same answers.
    const auth = { Authorization: `Bearer ${key}` };
    const big = await fetch(`${gateway.url}/v1/pets`, {
      method: "POST",
      headers: { ...auth, "Content-Type": "application/json" },
      body: `{"name":"${"a".repeat(HUGE)}","categoryId":1}`,
    });
    expect(big.status).toBe(413);
    expect(await big.json()).toMatchObject({ code: "payload_too_large", status: 413 });
    const traversal = await fetch(`${gateway.url}/v1/pets/..%2f..%2fetc%2fpasswd`, { headers: auth });
    expect(traversal.status).toBe(400);
    const repeated = await fetch(`${gateway.url}/v1/pets?limit=1&limit=2`, { headers: auth });
    expect(await repeated.json()).toMatchObject({ code: "invalid_request", status: 400 });
  });
});

describe("after the corpus", () => {
  it("still serves: a list answers 200, a well-formed create 201", async () => {
    const auth = { Authorization: `Bearer ${key}` };
    const list = await fetch(`${gateway.url}/v1/pets?limit=100`, { headers: auth });
    expect(list.status).toBe(200);
    // None of the refused creates was stored.
    const stored = (await list.json()) as { name: string }[];
    expect(stored).toEqual([]);
    const created = await fetch(`${gateway.url}/v1/pets`, {
      method: "POST",
      headers: { ...auth, "Content-Type": "application/json; charset=UTF-8" },
      body: JSON.stringify({ name: "Survivor", categoryId: 1 }),
    });
    expect(created.status).toBe(201);
    expect(await created.json()).toMatchObject({ name: "Survivor", categoryId: 1, status: "available" });
  });

  it("left Object.prototype unpolluted", () => {
    const probe = {} as Record<string, unknown>;
    expect(probe.polluted).toBeUndefined();
    expect(probe.isAdmin).toBeUndefined();
    expect(Object.getOwnPropertyNames(Object.prototype)).not.toContain("polluted");
    expect(Object.getOwnPropertyNames(Object.prototype)).not.toContain("isAdmin");
  });
});

describe("the real gateway process (node gateway/main.ts)", () => {
  let proc: GatewayProcess;

  beforeAll(async () => {
    proc = await spawnGateway({ PET_SERVICE_ADDR: pets.address, ...keys.gatewayEnv, LOG_LEVEL: "warn" });
  });

  afterAll(async () => {
    if (proc && proc.child.exitCode === null) {
      proc.child.kill("SIGKILL");
      await proc.exited;
    }
  });

  it("stays up through the worst of the corpus, answers 4xx and reveals nothing", async () => {
    const worst = CORPUS.filter((c) =>
      /5 MB|gzip bomb|nested|__proto__|URL|header|request line|smuggling|unknown method|surrogate|%ff|1e400/.test(c.name),
    );
    expect(worst.length).toBeGreaterThan(15);
    for (const c of worst) {
      const res = await rawRequest(proc.url, c.send());
      expect(res.status, c.name).toBeGreaterThanOrEqual(400);
      expect(res.status, c.name).toBeLessThan(500);
      expectNoLeak(res);
      expectErrorBody(res);
    }
    expect(proc.child.exitCode).toBeNull();
    const list = await fetch(`${proc.url}/v1/pets?limit=1`, { headers: { Authorization: `Bearer ${key}` } });
    expect(list.status).toBe(200);
    expect(proc.output()).not.toMatch(/"level":(50|60)/);
  });
});
