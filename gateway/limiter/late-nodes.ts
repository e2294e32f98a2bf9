/**
 * Redis nodes that left a limiter decision unanswered within the command timeout and answered none
 * since (fallback-store.ts refuses such decisions with 503): logged once when a node turns late and
 * once when it answers again, every late decision counted as a fault.
 */
import type { Counter } from "prom-client";
import type { Logger } from "../../lib/logger.ts";

export interface LateNodes {
  /** A decision on `node` got no reply in time. */
  unanswered(node: string, err: unknown): void;
  /** `node` answered (a decision, the heartbeat, a ping). */
  answered(node: string): void;
  size(): number;
  list(): string[];
}

export function lateNodes(opts: { logger: Logger; faults?: Pick<Counter, "inc"> | undefined }): LateNodes {
  const { logger, faults } = opts;
  const late = new Set<string>();
  return {
    unanswered(node, err) {
      faults?.inc();
      if (late.has(node)) return;
      late.add(node);
      logger.error({ err, node }, "redis did not answer a decision in time: refused with 503, not decided from memory");
    },
    answered(node) {
      if (late.delete(node)) logger.info({ node }, "redis answering decisions in time again");
    },
    size: () => late.size,
    list: () => [...late],
  };
}
