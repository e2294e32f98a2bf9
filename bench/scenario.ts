import type { Run } from "./load.ts";

/** One row of `npm run bench`: a load tool pointed at one front, with the processes whose CPU it measures. */
export interface Scenario {
  /** Short name: a, b, c, … (--only takes these). */
  key: string;
  label: string;
  /** Measured processes by column: front, pet (pet:0, pet:1, … for replicas), redis. */
  pids: Record<string, number>;
  run(durationSeconds: number): Promise<Run>;
}
