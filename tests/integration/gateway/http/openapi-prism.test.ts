import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { GET_PET_DEPRECATION } from "../../../../gateway/http/deprecation.ts";
import { fakeClock } from "../../../../testkit/fake-clock.ts";
import { createTestKeys, startGateway, type RunningGateway, type TestKeys } from "../../../../testkit/gateway.ts";
import { startPetService, type RunningPetService } from "../../../../testkit/pet-service.ts";
import { startPrismProxy, violationsOf, type PrismProxy, type Violation } from "../../../../testkit/prism.ts";

// The API description as its users' tools read it: Stoplight Prism, as a validating proxy in front
// of the real gateway, checks every response of real traffic against gateway/http/openapi.json.
// (Prism read an error schema written as `$ref` + sibling keywords as a replacement of Error, and
// flagged every error body: "must NOT have additional properties; found 'message'".)
const ROOT = path.resolve(import.meta.dirname, "../../../..");
const clock = fakeClock();
let pets: RunningPetService;
let keys: TestKeys;
let gateway: RunningGateway;
let prism: PrismProxy;

beforeAll(async () => {
  pets = await startPetService();
  keys = await createTestKeys();
  gateway = await startGateway({ petServiceAddr: pets.address, keys, clock: clock.clock });
  prism = await startPrismProxy(path.join(ROOT, "gateway/http/openapi.json"), `${gateway.url}/v1`);
}, 90_000);

afterAll(async () => {
  await prism?.stop();
  await gateway?.close();
  await pets?.stop();
  await keys?.remove();
});

it("finds no response that breaks the description, on traffic answering every documented status", async () => {
  const key = await keys.issue({ plan: "business" });
  const seen: { status: number; what: string; violations: Violation[] }[] = [];
  const send = async (what: string, p: string, init: RequestInit & { auth?: string | null } = {}) => {
    const headers = new Headers(init.headers);
    if (init.auth !== null) headers.set("Authorization", `Bearer ${init.auth ?? key}`);
    const res = await fetch(`${prism.url}${p}`, { ...init, headers });
    await res.arrayBuffer();
    seen.push({ status: res.status, what, violations: violationsOf(res) });
    return res;
  };
  const json = { "Content-Type": "application/json" };
  const create = (body: unknown, headers: Record<string, string> = {}) =>
    send(`create ${JSON.stringify(body)}`, "/pets", { method: "POST", headers: { ...json, ...headers }, body: JSON.stringify(body) });

  await send("list, empty", "/pets");
  const created = await create({ name: "Rex", categoryId: 1 });
  const id = created.headers.get("location")!.split("/").pop();
  await create({ name: "Bella", categoryId: 2, status: "pending" }, { "Idempotency-Key": "prism-1" });
  await create({ name: "Bella", categoryId: 2, status: "pending" }, { "Idempotency-Key": "prism-1" });
  await create({ name: "Max", categoryId: 2 }, { "Idempotency-Key": "prism-1" });
  // Below 2^53: Prism reads JSON into JavaScript numbers and holds format int64 to the safe-integer
  // range, so it would flag any id above 2^53 that the API (exact over all of int64) returns.
  await create({ name: "Luna", categoryId: 2 ** 53 - 1, status: "sold" });
  const page = await send("first page", "/pets?limit=2");
  await send("next page", page.headers.get("link")!.match(/<\/v1([^>]+)>/)![1]!);
  await send("by status", "/pets?status=sold&limit=100");
  await send("get", `/pets/${id}`);
  await send("get, missing", "/pets/999999");
  await send("limit 0", "/pets?limit=0");
  await send("forged cursor", "/pets?cursor=bm90LWEtY3Vyc29y");
  await send("unknown parameter", "/pets?Status=sold");
  await send("petId not an integer", "/pets/abc");
  // (Malformed JSON is left out: Prism parses a JSON body itself and never answers one it cannot parse.)
  await create({ categoryId: 0 });
  await send("not JSON", "/pets", { method: "POST", headers: { "Content-Type": "text/plain" }, body: "Rex" });
  await create({ name: "x".repeat(20_000), categoryId: 1 });
  await send("no key", "/pets", { auth: null });
  await send("bad key", "/pets", { auth: "not-a-key" });
  await send("other method", "/pets", { method: "PUT", headers: json, body: "{}" });
  const limited = await keys.issue({ plan: "enterprise", perMinute: 1, perDay: 100 });
  await send("within the limit", "/pets", { auth: limited });
  await send("over the limit", "/pets", { auth: limited });

  await pets.stop();
  await send("pet service down", "/pets");
  clock.now = GET_PET_DEPRECATION.sunsetAt;
  await send("after the sunset", `/pets/${id}`);

  expect(new Set(seen.map((s) => s.status))).toEqual(new Set([200, 201, 400, 401, 404, 405, 410, 413, 415, 422, 429, 503]));
  const responseViolations = seen.flatMap((s) => s.violations.filter((v) => v.location[0] === "response").map((v) => ({ status: s.status, what: s.what, ...v })));
  expect(responseViolations).toEqual([]);
  // Prism does validate: the requests that break the description are reported as such.
  expect(seen.find((s) => s.what === "limit 0")!.violations).toContainEqual(expect.objectContaining({ location: ["request", "query", "limit"] }));
}, 60_000);
