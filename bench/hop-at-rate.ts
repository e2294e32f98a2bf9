import type { Run } from "./load.ts";
import { measureOpenLoop } from "./open-loop-rows.ts";
import type { ReportRow, Summary } from "./report.ts";
import type { Scenario } from "./scenario.ts";
import { fmt } from "../testkit/stats.ts";

/** Issue 21's rows: the same full path with tracing disabled, unset, on at 1 % and 100 %, and with mTLS on the hop. */
const HOP_KEYS = ["a-notrace", "a-unset", "a-otel1", "a-otel100", "a-tls"] as const;

/** The key of a hop row measured at the common offered rate. */
export const atRateKey = (key: string) => `${key}@rate`;

/**
 * The hop rows again, each offered the same constant rate (open loop): half the peak of the
 * slowest of them, so every one is below its own. At the peak, a variant that costs more also
 * answers fewer requests, with other batching in both processes (more wake-ups and writes per
 * request), which moves its CPU per request further than the added work does; at one rate below
 * every peak, the processes do the same work per second apart from what the variant adds.
 * Rounds alternate as the peak rows' do. Needs two hop rows or more (nothing to compare otherwise).
 */
export async function hopRowsAtRate(o: {
  scenarios: readonly Scenario[];
  summaries: ReadonlyMap<string, Summary>;
  settings: { rounds: number; duration: number };
  check: (name: string, run: Run) => void;
}): Promise<ReportRow[]> {
  const hop = o.scenarios.filter((s) => (HOP_KEYS as readonly string[]).includes(s.key) && s.atRate);
  if (hop.length < 2) return [];
  const rate = Math.max(1, Math.round(Math.min(...hop.map((s) => o.summaries.get(s.key)!.rps)) / 2));
  const plan = hop.map((s) => ({
    key: atRateKey(s.key),
    label: `(${s.key}) at ${fmt(rate)} req/s offered (half the slowest tracing/TLS row's peak, open loop)`,
    rate,
    atRate: s.atRate!,
  }));
  return measureOpenLoop(plan, o);
}
