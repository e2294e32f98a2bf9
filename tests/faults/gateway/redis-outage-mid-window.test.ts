/**
 * An outage that starts mid-window: two real gateway processes on one real redis-server, a key of
 * 40 a minute used unevenly through them — 25 requests through A, 5 through B — then Redis is
 * killed and 40 requests more go to each gateway at once. Each decides from memory with its share
 * (20) less what it admitted itself and what Redis last said the others had admitted, so:
 *  - 25 through A, then 5 through B: exactly 40 in all (B heard of A's 25: it admits 10 more);
 *  - 5 through B, then 25 through A: 45, the worst case the docs give, 40 + min(what A admitted
 *    beyond its share, what A admitted after B last heard of the key) = 40 + min(5, 25): B could
 *    not know of A's 25;
 *  - both at once: between the two, exactly 40 + min(5, 30 − the count B last heard of).
 * Three outages, each after Redis is back and the gateways decide in it again.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { loggedReplicas, useGatewayProcesses, type GatewayProcess } from "../../../testkit/gateway-process.ts";
import { concurrentGets, untilPastShares, type Reply } from "../../../testkit/gateway.ts";
import { startRedis, type PrivateRedis } from "../../../testkit/redis-server.ts";
import { until } from "../../../testkit/until.ts";

const LIMIT = 40;
const SHARE = LIMIT / 2;
const [THROUGH_A, THROUGH_B] = [25, 5];
let redis: PrivateRedis;

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

const { gateways, keys } = useGatewayProcesses(2, () => redis.url);
const freshKey = () => keys().issue({ plan: "enterprise", perMinute: LIMIT, perDay: 100_000 });

type Order = "A then B" | "B then A" | "at once";
const ORDERS: Order[] = ["A then B", "B then A", "at once"];

/** The 30 requests before the outage, in `order`; returns the count B last heard of (Redis's count in its last reply). */
async function beforeOutage(key: string, order: Order): Promise<number> {
  const [a, b] = gateways();
  const through = (g: GatewayProcess, n: number) => concurrentGets([g.url], key, n);
  let replies: { a: Reply[]; b: Reply[] };
  if (order === "A then B") replies = { a: await through(a!, THROUGH_A), b: await through(b!, THROUGH_B) };
  else if (order === "B then A") replies = { b: await through(b!, THROUGH_B), a: await through(a!, THROUGH_A) };
  else [replies] = [await Promise.all([through(a!, THROUGH_A), through(b!, THROUGH_B)]).then(([ra, rb]) => ({ a: ra, b: rb }))];
  // All decided in Redis (the full limit shown) and admitted.
  expect(new Set([...replies.a, ...replies.b].map((r) => `${r.status} ${r.limit}`))).toEqual(new Set([`200 ${LIMIT}`]));
  return LIMIT - Math.min(...replies.b.map((r) => Number(r.remaining)));
}

it("admits at most the limit plus the documented worst case, exactly, across three outages that start mid-window", async () => {
  const outcomes: string[] = [];
  for (let outage = 1; outage <= 3; outage++) {
    const keyOf = new Map<Order, { key: string; heardByB: number }>();
    for (const order of ORDERS) {
      const key = await freshKey();
      keyOf.set(order, { key, heardByB: await beforeOutage(key, order) });
    }
    // Each knows there are two (its last heartbeat's count, which it logs when it changes).
    await until("both heartbeats count two replicas", () => gateways().every((g) => loggedReplicas(g) === 2));
    await redis.kill();
    await until("both gateways limit from memory", async () =>
      (await Promise.all(gateways().map(async (g) => (await fetch(`${g.url}/readyz`)).status))).every((s) => s === 503),
    );
    for (const order of ORDERS) {
      const { key, heardByB } = keyOf.get(order)!;
      const replies = await concurrentGets(gateways().map((g) => g.url), key, 2 * LIMIT);
      const total = THROUGH_A + THROUGH_B + replies.filter((r) => r.status === 200).length;
      // A admitted beyond its share (25 > 20); B heard of `heardByB` of the window's 30.
      const worst = LIMIT + Math.min(THROUGH_A - SHARE, THROUGH_A + THROUGH_B - heardByB);
      outcomes.push(`outage ${outage}, ${order}: B heard of ${heardByB}, ${total} admitted in all (bound ${worst})`);
      expect(total).toBe(worst);
      if (order === "A then B") expect(total).toBe(LIMIT);
      if (order === "B then A") expect(total).toBe(LIMIT + THROUGH_A - SHARE);
      expect(replies.filter((r) => r.status !== 200 && r.status !== 429)).toEqual([]);
      expect(new Set(replies.map((r) => r.limit))).toEqual(new Set([String(SHARE)])); // all from memory
    }
    await redis.start();
    await untilPastShares(gateways().map((g) => g.url), freshKey, SHARE);
  }
  console.log(outcomes.join("\n"));
});
