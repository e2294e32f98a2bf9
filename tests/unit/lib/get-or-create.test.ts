import { expect, it } from "vitest";
import { getOrCreate } from "../../../lib/get-or-create.ts";

it("makes a value once per key and returns the cached one afterwards, for Map and WeakMap", () => {
  const made: string[] = [];
  const cache = new Map<string, { key: string }>();
  const a = getOrCreate(cache, "a", () => (made.push("a"), { key: "a" }));
  expect(getOrCreate(cache, "a", () => (made.push("again"), { key: "other" }))).toBe(a);
  getOrCreate(cache, "b", () => (made.push("b"), { key: "b" }));
  expect(made).toEqual(["a", "b"]);

  const weak = new WeakMap<object, number>();
  const owner = {};
  expect(getOrCreate(weak, owner, () => 1)).toBe(1);
  expect(getOrCreate(weak, owner, () => 2)).toBe(1);
});
