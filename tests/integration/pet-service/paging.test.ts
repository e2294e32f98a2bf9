import * as grpc from "@grpc/grpc-js";
import { beforeAll, describe, expect, it } from "vitest";
import { fieldViolationsOf } from "../../../pet-service/grpc-errors.ts";
import type { ListPetsRequestInit, Pet, PetStatus } from "../../../proto/generated/petstore-v1.ts";
import { freshService, petClient, rejection, startPetService, testDbPath, type PetClient } from "../../../testkit/pet-service.ts";

/** ListPets paging (AIP-158) over real gRPC and a real SQLite file. */

const STATUSES = ["PET_STATUS_AVAILABLE", "PET_STATUS_PENDING", "PET_STATUS_SOLD"] as const;


async function seed(client: PetClient, count: number, status = (i: number): PetStatus => STATUSES[i % 3]!): Promise<Pet[]> {
  const pets: Pet[] = [];
  // In batches: concurrent creates share commits, and the ids still follow acknowledgement order.
  for (let i = 0; i < count; i += 50) {
    const batch = Array.from({ length: Math.min(50, count - i) }, (_, j) => client.create({ name: `p${i + j}`, categoryId: "1", status: status(i + j) }));
    pets.push(...(await Promise.all(batch)));
  }
  return pets.sort((a, b) => (BigInt(a.id) < BigInt(b.id) ? -1 : 1));
}

/** Follows next_page_token from the first page to the last; every page as it came. */
async function walk(client: PetClient, request: ListPetsRequestInit): Promise<{ pages: Pet[][]; tokens: string[] }> {
  const pages: Pet[][] = [];
  const tokens: string[] = [];
  let pageToken = "";
  do {
    const page = await client.page({ ...request, pageToken });
    pages.push(page.pets);
    tokens.push(page.nextPageToken);
    pageToken = page.nextPageToken;
    if (pages.length > 1_000) throw new Error("the walk does not end");
  } while (pageToken !== "");
  return { pages, tokens };
}

const ids = (pets: Pet[]) => pets.map((p) => p.id);
const ascending = (pets: Pet[]) => pets.every((p, i) => i === 0 || BigInt(p.id) > BigInt(pets[i - 1]!.id));

describe("walking 250 pets with limit 100", () => {
  const { client } = freshService();
  let all: Pet[];
  beforeAll(async () => {
    all = await seed(client(), 250);
  });

  it("gives pages of 100, 100 and 50, each pet exactly once in ascending id order, and no token after the last", async () => {
    const { pages, tokens } = await walk(client(), { limit: 100 });
    expect(pages.map((p) => p.length)).toEqual([100, 100, 50]);
    expect(pages.flat()).toEqual(all);
    expect(ascending(pages.flat())).toBe(true);
    expect(tokens[0]).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(tokens.at(-1)).toBe("");
  });

  it("walks one status with an odd limit: only that status, each once, in order", async () => {
    for (const status of STATUSES) {
      const { pages } = await walk(client(), { limit: 7, status });
      const matching = all.filter((p) => p.status === status);
      expect(pages.flat()).toEqual(matching);
      expect(pages.map((p) => p.length)).toEqual([...Array(Math.floor(matching.length / 7)).fill(7), matching.length % 7].filter((n) => n > 0));
    }
  });

  it("lets the limit change from one page to the next", async () => {
    const first = await client().page({ limit: 3 });
    const second = await client().page({ limit: 5, pageToken: first.nextPageToken });
    expect([...first.pets, ...second.pets]).toEqual(all.slice(0, 8));
  });

  it("refuses a malformed, altered or forged token, or one from another filter, with INVALID_ARGUMENT naming page_token", async () => {
    const sold = await client().page({ limit: 2, status: "PET_STATUS_SOLD" });
    const token = sold.nextPageToken;
    const flip = (at: number) => token.slice(0, at) + (token[at] === "A" ? "B" : "A") + token.slice(at + 1);
    const cases: [string, ListPetsRequestInit, RegExp][] = [
      ["malformed", { pageToken: "not-a-token" }, /^page_token is malformed/],
      ["truncated", { status: "PET_STATUS_SOLD", pageToken: token.slice(0, -2) }, /^page_token is malformed/],
      ["altered position", { status: "PET_STATUS_SOLD", pageToken: flip(10) }, /^page_token was not issued by this service/],
      ["altered filter", { pageToken: flip(1) }, /^page_token (was not issued by this service|is malformed)/],
      ["another filter (none)", { pageToken: token }, /^page_token was issued for another status filter/],
      ["another filter (pending)", { status: "PET_STATUS_PENDING", pageToken: token }, /^page_token was issued for another status filter/],
    ];
    for (const [what, request, message] of cases) {
      const error = await rejection(client().page(request));
      expect(error.code, what).toBe(grpc.status.INVALID_ARGUMENT);
      expect(fieldViolationsOf(error), what).toEqual([{ field: "page_token", description: expect.stringMatching(message) }]);
    }
  });
});

describe("a walk that ends exactly on a page boundary", () => {
  const { client } = freshService();

  it("of an empty collection is one empty page without a token", async () => {
    expect(await client().page({ limit: 100 })).toEqual({ pets: [], nextPageToken: "" });
  });

  it("has no empty page after it: 200 pets with limit 100 are two pages, the second without a token", async () => {
    const all = await seed(client(), 200);
    const { pages, tokens } = await walk(client(), { limit: 100 });
    expect(pages.map((p) => p.length)).toEqual([100, 100]);
    expect(tokens[1]).toBe("");
    expect(pages.flat()).toEqual(all);
  });
});

describe("a walk while another client keeps creating", () => {
  const { client } = freshService();

  it("never repeats a pet and never skips one that existed when the walk began", async () => {
    const before = await seed(client(), 120);
    let creating = true;
    const addedDuring: Pet[] = [];
    const creator = (async () => {
      for (let i = 0; creating; i++) addedDuring.push(await client().create({ name: `during ${i}`, categoryId: "2", status: STATUSES[i % 3] }));
    })();
    // Wait until creation is under way, so pages really interleave with creates.
    while (addedDuring.length < 3) await new Promise((r) => setTimeout(r, 5));
    const existing = [...before, ...addedDuring];
    const seen: Pet[] = [];
    let pageToken = "";
    do {
      const page = await client().page({ limit: 9, pageToken });
      seen.push(...page.pets);
      pageToken = page.nextPageToken;
    } while (pageToken !== "" && seen.length < 5_000);
    creating = false;
    await creator;

    expect(new Set(ids(seen)).size).toBe(seen.length);
    expect(ascending(seen)).toBe(true);
    const seenIds = new Set(ids(seen));
    expect(existing.filter((p) => !seenIds.has(p.id))).toEqual([]);
    // Pets created during the walk are not lost either: they appear, or come after the last page.
    expect(addedDuring.length).toBeGreaterThan(3);
  });
});

describe("page tokens across a restart", () => {
  it("stay valid: the secret lives in the database, not in the process", async () => {
    const db = await testDbPath();
    const first = await startPetService({ dbPath: db.dbPath });
    const client = petClient(first.address);
    await seed(client, 5);
    const page = await client.page({ limit: 2 });
    client.close();
    await first.stop();
    const second = await startPetService({ dbPath: db.dbPath });
    const again = petClient(second.address);
    try {
      const next = await again.page({ limit: 2, pageToken: page.nextPageToken });
      expect(next.pets).toHaveLength(2);
      expect(BigInt(next.pets[0]!.id)).toBeGreaterThan(BigInt(page.pets[1]!.id));
    } finally {
      again.close();
      await second.stop();
      await db.remove();
    }
  });
});
