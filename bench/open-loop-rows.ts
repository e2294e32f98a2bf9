import type { Run } from "./load.ts";
import { log } from "./processes.ts";
import { runLine, summarize, type ReportRow } from "./report.ts";
import { roundOrder } from "./scenario.ts";

/** One row offered a constant rate, open loop (load.ts, openLoop). */
export interface OpenLoopPlan {
  key: string;
  label: string;
  rate: number;
  atRate(rate: number, durationSeconds: number): Promise<Run>;
}

/**
 * Each planned row at its rate, once per round, the order rotating from round to round as the
 * peak rows' does; every run checked (`check`) and logged, the rows summarized over the rounds.
 */
export async function measureOpenLoop(
  plan: readonly OpenLoopPlan[],
  o: { settings: { rounds: number; duration: number }; check: (name: string, run: Run) => void },
): Promise<ReportRow[]> {
  const runs = new Map<OpenLoopPlan, Run[]>(plan.map((p) => [p, []]));
  for (let round = 1; round <= o.settings.rounds; round++) {
    for (const p of roundOrder(plan, round)) {
      const run = await p.atRate(p.rate, o.settings.duration);
      o.check(`${p.key} at ${p.rate} req/s`, run);
      runs.get(p)!.push(run);
      log(`open-loop round ${round} ${p.key}: ${runLine(run)}`);
    }
  }
  return plan.map((p) => ({ key: p.key, label: p.label, summary: summarize(runs.get(p)!) }));
}
