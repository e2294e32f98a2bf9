import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["tests/**/*.test.ts"],
    // Slow fault injection (Redis Cluster and Sentinel failovers, a full disk, thousands of slow
    // clients) runs in `npm run test:faults` (vitest.faults.config.ts); CI runs both.
    exclude: [...configDefaults.exclude, "tests/faults/**"],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // Integration suites start real processes and servers; two cores, so keep files modest.
    maxWorkers: 2,
  },
});
