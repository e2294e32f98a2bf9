import { defineConfig } from "vitest/config";

/**
 * `npm run test:deploy`: deploy/ for real, with podman — the image built from deploy/Dockerfile,
 * the compose stack and the Kubernetes overlays played as pods (tests/deploy/README in
 * deploy/README.md, "The deploy test"). Files end in .deploy.ts so that `npm test` does not
 * collect them; they run one at a time, after the global setup has built the images.
 */
export default defineConfig({
  test: {
    root: new URL("../../", import.meta.url).pathname,
    include: ["tests/deploy/**/*.deploy.ts"],
    globalSetup: ["tests/deploy/global-setup.ts"],
    fileParallelism: false,
    testTimeout: 300_000,
    hookTimeout: 600_000,
  },
});
