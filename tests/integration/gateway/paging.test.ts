import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Pet as ProtoPet, PetStatus } from "../../../proto/generated/petstore-v1.ts";
import { createTestKeys, startGateway, type RunningGateway, type TestKeys } from "../../../testkit/gateway.ts";
import { recordingFetch } from "../../../testkit/openapi-validator.ts";
import { petClient, startPetService, type PetClient, type RunningPetService } from "../../../testkit/pet-service.ts";

/** Paging through GET /v1/pets as a client does: follow Link rel="next" until there is none (HTTP → gRPC → SQLite). */

const PROTO_STATUSES = ["PET_STATUS_AVAILABLE", "PET_STATUS_PENDING", "PET_STATUS_SOLD"] as const;
const STATUS_OF: Record<string, string> = {
  PET_STATUS_AVAILABLE: "available",
  PET_STATUS_PENDING: "pending",
  PET_STATUS_SOLD: "sold",
};
const RATE_LIMIT_HEADERS = ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "ratelimit-policy", "ratelimit"];

interface JsonPet {
  id: number;
  name: string;
  categoryId: number;
  status: string;
}
interface Page {
  pets: JsonPet[];
  /** The Link header's target, when present. */
  next?: string;
  res: Response;
}

/** One pet service, its gRPC client for seeding, and a gateway in front; every response is checked against openapi.json. */
function setUp() {
  let service: RunningPetService;
  let grpc: PetClient;
  let keys: TestKeys;
  let gateway: RunningGateway;
  let key: string;
  let recorder: ReturnType<typeof recordingFetch>;
  beforeAll(async () => {
    service = await startPetService();
    grpc = petClient(service.address);
    keys = await createTestKeys();
    key = await keys.issue({ plan: "enterprise", perMinute: 100_000, perDay: 1_000_000 });
    gateway = await startGateway({ petServiceAddr: service.address, keys });
    recorder = recordingFetch(gateway.url);
  });
  afterAll(async () => {
    expect(recorder.problems()).toEqual([]);
    grpc?.close();
    await gateway?.close();
    await service?.stop();
    await keys?.remove();
  });

  const get = (path: string) => recorder.fetch(`${gateway.url}${path}`, { headers: { Authorization: `Bearer ${key}` } });
  const page = async (path: string): Promise<Page> => {
    const res = await get(path);
    expect(res.status, path).toBe(200);
    for (const name of RATE_LIMIT_HEADERS) expect(res.headers.get(name), `${name} on ${path}`).not.toBeNull();
    const link = res.headers.get("link");
    const next = link === null ? undefined : /^<([^>]+)>; rel="next"$/.exec(link)?.[1];
    if (link !== null) expect(next, link).toBeDefined();
    return { pets: (await res.json()) as JsonPet[], ...(next && { next }), res };
  };
  /** Every page from `first` on, following Link rel="next". */
  const walk = async (first: string): Promise<Page[]> => {
    const pages = [await page(first)];
    while (pages.at(-1)!.next) {
      pages.push(await page(pages.at(-1)!.next!));
      if (pages.length > 1_000) throw new Error("the walk does not end");
    }
    return pages;
  };
  const seed = async (count: number, status = (i: number): PetStatus => PROTO_STATUSES[i % 3]!): Promise<JsonPet[]> => {
    const created: ProtoPet[] = [];
    for (let i = 0; i < count; i += 50) {
      const batch = Array.from({ length: Math.min(50, count - i) }, (_, j) => grpc.create({ name: `p${i + j}`, categoryId: "3", status: status(i + j) }));
      created.push(...(await Promise.all(batch)));
    }
    return created
      .map((p) => ({ id: Number(p.id), name: p.name, categoryId: Number(p.categoryId), status: STATUS_OF[p.status]! }))
      .sort((a, b) => a.id - b.id);
  };
  const create = (name: string) =>
    recorder.fetch(`${gateway.url}/v1/pets`, {
      method: "POST",
      headers: { Authorization: `Bearer ${key}`, "Content-Type": "application/json" },
      body: JSON.stringify({ name, categoryId: 4 }),
    });
  return { get, page, walk, seed, create };
}

const ascending = (pets: JsonPet[]) => pets.every((p, i) => i === 0 || p.id > pets[i - 1]!.id);

describe("walking 250 pets with limit 100", () => {
  const api = setUp();
  let all: JsonPet[];
  beforeAll(async () => {
    all = await api.seed(250);
  });

  it("gives pages of 100, 100 and 50 with Link rel=next on all but the last; each pet once, ascending", async () => {
    const pages = await api.walk("/v1/pets?limit=100");
    expect(pages.map((p) => p.pets.length)).toEqual([100, 100, 50]);
    expect(pages.map((p) => p.next === undefined)).toEqual([false, false, true]);
    const pets = pages.flatMap((p) => p.pets);
    expect(pets).toEqual(all);
    expect(ascending(pets)).toBe(true);
    // Same limit (and no status), only the cursor new.
    expect(pages[0]!.next).toMatch(/^\/v1\/pets\?limit=100&cursor=[A-Za-z0-9_-]+$/);
  });

  it("walks one status with an odd limit, carrying limit and status into every Link", async () => {
    const pages = await api.walk("/v1/pets?limit=7&status=pending");
    const pending = all.filter((p) => p.status === "pending");
    expect(pages.flatMap((p) => p.pets)).toEqual(pending);
    expect(pages.slice(0, -1).every((p) => p.pets.length === 7)).toBe(true);
    for (const p of pages.slice(0, -1)) expect(p.next).toMatch(/^\/v1\/pets\?limit=7&status=pending&cursor=[A-Za-z0-9_-]+$/);
  });

  it("without a limit, pages by the default 20 and leaves limit out of the Link as the client did", async () => {
    const first = await api.page("/v1/pets");
    expect(first.pets).toEqual(all.slice(0, 20));
    expect(first.next).toMatch(/^\/v1\/pets\?cursor=[A-Za-z0-9_-]+$/);
    const second = await api.page(first.next!);
    expect(second.pets).toEqual(all.slice(20, 40));
  });

  it("refuses bad cursors with 400 invalid_request naming cursor, and still sends the rate-limit headers", async () => {
    const sold = await api.page("/v1/pets?limit=2&status=sold");
    const cursor = new URL(sold.next!, "http://x").searchParams.get("cursor")!;
    const altered = cursor.slice(0, 12) + (cursor[12] === "A" ? "B" : "A") + cursor.slice(13);
    const cases: [string, string][] = [
      ["malformed", "/v1/pets?cursor=definitely-not-ours"],
      ["altered", `/v1/pets?status=sold&cursor=${altered}`],
      ["another filter", `/v1/pets?status=available&cursor=${cursor}`],
      ["no filter", `/v1/pets?cursor=${cursor}`],
      ["empty", "/v1/pets?cursor="],
      ["repeated", `/v1/pets?status=sold&cursor=${cursor}&cursor=${cursor}`],
      ["too long", `/v1/pets?cursor=${"A".repeat(300)}`],
    ];
    for (const [what, path] of cases) {
      const res = await api.get(path);
      expect(res.status, what).toBe(400);
      for (const name of RATE_LIMIT_HEADERS) expect(res.headers.get(name), `${name}: ${what}`).not.toBeNull();
      expect(res.headers.get("link"), what).toBeNull();
      const body = (await res.json()) as { code: string; status: number; message: string; details: { field: string; message: string }[] };
      expect(body, what).toMatchObject({ code: "invalid_request", status: 400 });
      expect(body.details.map((d) => d.field), what).toEqual(["cursor"]);
      expect(body.message, what).not.toMatch(/page_token|sql|\/work|at /i);
    }
  });
});

describe("a walk that ends exactly on a page boundary", () => {
  const api = setUp();

  it("200 pets with limit 100: two pages, no Link on the second, no empty third page", async () => {
    const all = await api.seed(200);
    const pages = await api.walk("/v1/pets?limit=100");
    expect(pages.map((p) => p.pets.length)).toEqual([100, 100]);
    expect(pages[1]!.next).toBeUndefined();
    expect(pages.flatMap((p) => p.pets)).toEqual(all);
  });
});

describe("a walk while another client keeps creating", () => {
  const api = setUp();

  it("never repeats a pet and never skips one that existed when the walk began", async () => {
    const before = await api.seed(150);
    let creating = true;
    const added: JsonPet[] = [];
    const creator = (async () => {
      for (let i = 0; creating; i++) {
        const res = await api.create(`during ${i}`);
        expect(res.status).toBe(201);
        added.push((await res.json()) as JsonPet);
      }
    })();
    while (added.length < 3) await new Promise((r) => setTimeout(r, 5));
    const addedBeforeWalk = [...added];
    const pages = await api.walk("/v1/pets?limit=11");
    creating = false;
    await creator;

    const seen = pages.flatMap((p) => p.pets);
    expect(new Set(seen.map((p) => p.id)).size).toBe(seen.length);
    expect(ascending(seen)).toBe(true);
    const seenIds = new Set(seen.map((p) => p.id));
    expect([...before, ...addedBeforeWalk].filter((p) => !seenIds.has(p.id))).toEqual([]);
  });
});
