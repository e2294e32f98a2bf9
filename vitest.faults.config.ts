import { defineConfig } from "vitest/config";

/** `npm run test:faults`: faults injected from outside against real servers; one file at a time. */
export default defineConfig({
  test: {
    include: ["tests/faults/**/*.test.ts"],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Each file starts clusters, failovers or thousands of sockets: alone, so timings are its own.
    fileParallelism: false,
  },
});
