import { expect, it } from "vitest";
import { lintOpenApi } from "../../../../testkit/redocly-lint.ts";

// redocly.yaml's api admin@v1: the recommended rules, contact and license required.
it("keys/api/openapi.json is clean under `redocly lint`: 0 errors, 0 warnings, nothing ignored", async () => {
  const report = await lintOpenApi("admin@v1");
  expect(report.problems).toEqual([]);
  expect(report.totals).toEqual({ errors: 0, warnings: 0, ignored: 0 });
});
