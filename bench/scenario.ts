import type { Run } from "./load.ts";

/** One row of `npm run bench`: a load tool pointed at one front, with the processes whose CPU it measures. */
export interface Scenario {
  /** Short name: a, b, c, … (--only takes these). */
  key: string;
  label: string;
  /** Measured processes by column: front, pet (pet:0, pet:1, … for replicas), redis. */
  pids: Record<string, number>;
  /** At the peak: a closed loop (wrk, h2load) as fast as the front answers. */
  run(durationSeconds: number): Promise<Run>;
  /** HTTP rows only: open loop at a constant offered rate (load.ts, openLoop). */
  atRate?(rate: number, durationSeconds: number): Promise<Run>;
}

/**
 * The order of one round: each round starts one item further on, so no scenario always follows
 * the same one or always runs first: a place in the order (after a heavy neighbour, at a round's
 * start) is shared out over the rounds instead of weighing on one row. `round` counts from 1.
 */
export function roundOrder<T>(items: readonly T[], round: number): T[] {
  const shift = (round - 1) % Math.max(1, items.length);
  return [...items.slice(shift), ...items.slice(0, shift)];
}
