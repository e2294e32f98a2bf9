import { expect, it } from "vitest";
import { lintOpenApi } from "../../../../testkit/redocly-lint.ts";

// Redocly CLI with the repository's redocly.yaml (api public@v1: recommended rules; contact and license required).
it("gateway/http/openapi.json is clean under `redocly lint`: 0 errors, 0 warnings, nothing ignored", async () => {
  const report = await lintOpenApi("public@v1");
  expect(report.problems).toEqual([]);
  expect(report.totals).toEqual({ errors: 0, warnings: 0, ignored: 0 });
});
