/** The part of cluster-key-slot (an ioredis dependency; it ships no types) that lib/redis-keys.ts uses. */
declare module "cluster-key-slot" {
  /** The Redis Cluster hash slot (0..16383) of a key, honouring its `{hash tag}`. */
  export default function calculateSlot(key: string | Buffer): number;
}
