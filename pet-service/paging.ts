import type { ListPetsResponse } from "../proto/generated/petstore-v1.ts";
import type { PageTokens } from "./page-token.ts";
import { toProtoPet } from "./proto-mapping.ts";
import type { ListQuery, PetStore } from "./store/pet-store.ts";

/**
 * One page of ListPets. It asks the store for one pet more than the page holds: the extra pet
 * only says whether another page follows, so a walk that ends exactly on a page boundary gets
 * no empty page after it. The next token starts after the page's last id, under the same filter.
 */
export async function listPage(store: PetStore, tokens: PageTokens, query: ListQuery): Promise<ListPetsResponse> {
  const pets = await store.list({ ...query, limit: query.limit + 1 });
  if (pets.length <= query.limit) return { pets: pets.map(toProtoPet), nextPageToken: "" };
  const page = pets.slice(0, query.limit);
  const nextPageToken = tokens.encode({ afterId: page[page.length - 1]!.id, ...(query.status && { status: query.status }) });
  return { pets: page.map(toProtoPet), nextPageToken };
}
