import { execFile } from "node:child_process";
import path from "node:path";

const ROOT = path.resolve(import.meta.dirname, "..");

export interface LintReport {
  totals: { errors: number; warnings: number; ignored: number };
  /** "severity ruleId at pointer: message", one per problem. */
  problems: string[];
}

/** `redocly lint <api>` with the repository's redocly.yaml (its `apis`: public@v1, admin@v1). */
export async function lintOpenApi(api: string): Promise<LintReport> {
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile(path.join(ROOT, "node_modules/.bin/redocly"), ["lint", api, "--format=json"], { cwd: ROOT }, (err, out, stderr) =>
      // Problems make it exit 1; the report on stdout says which.
      out.trim().startsWith("{") ? resolve(out) : reject(new Error(`redocly lint failed: ${err?.message}\n${stderr}`)),
    );
  });
  const report = JSON.parse(stdout) as { totals: LintReport["totals"]; problems: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }[] };
  return { totals: report.totals, problems: report.problems.map((p) => `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`) };
}
