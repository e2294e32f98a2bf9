import { execFile } from "node:child_process";
import path from "node:path";
import { expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../../../..");

interface LintReport {
  totals: { errors: number; warnings: number; ignored: number };
  problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[];
}

// Redocly CLI with the repository's redocly.yaml (recommended rules; contact and license required).
it("gateway/http/openapi.json is clean under `redocly lint`: 0 errors, 0 warnings, nothing ignored", async () => {
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile(path.join(ROOT, "node_modules/.bin/redocly"), ["lint", "public@v1", "--format=json"], { cwd: ROOT }, (err, out, stderr) =>
      // Problems make it exit 1; the report on stdout says which.
      out.trim().startsWith("{") ? resolve(out) : reject(new Error(`redocly lint failed: ${err?.message}\n${stderr}`)),
    );
  });
  const report = JSON.parse(stdout) as LintReport;
  const problems = report.problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`);
  expect(problems).toEqual([]);
  expect(report.totals).toEqual({ errors: 0, warnings: 0, ignored: 0 });
});
