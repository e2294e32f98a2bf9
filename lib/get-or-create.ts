/**
 * The value cached under `key`, made by `make()` the first time. For small bounded key sets on
 * hot paths: metric label children (prom-client's `labels()` hashes its label object on every
 * call) and values derived once per verified key.
 */
export function getOrCreate<K, V>(cache: { get(key: K): V | undefined; set(key: K, value: V): unknown }, key: K, make: () => V): V {
  let value = cache.get(key);
  if (value === undefined) cache.set(key, (value = make()));
  return value;
}
