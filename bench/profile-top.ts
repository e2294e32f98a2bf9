/**
 * Where the time goes in a V8 CPU profile (`node --cpu-prof`, or `npm run bench -- --profile DIR`):
 * self time by function and by package, as percentages of the busy (not idle) samples.
 *
 *   node bench/profile-top.ts FILE.cpuprofile [--top 25]
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
interface Profile {
  nodes: Node[];
  samples: number[];
}

const { values, positionals } = parseArgs({ options: { top: { type: "string", default: "25" } }, allowPositionals: true });
const top = Number(values.top);

for (const file of positionals) {
  const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const hits = new Map<number, number>();
  for (const id of profile.samples) hits.set(id, (hits.get(id) ?? 0) + 1);
  const idle = profile.nodes.filter((n) => n.callFrame.functionName === "(idle)").reduce((sum, n) => sum + (hits.get(n.id) ?? 0), 0);
  const total = profile.samples.length - idle;
  const fnSelf = new Map<string, number>();
  const pkgSelf = new Map<string, number>();
  for (const [id, count] of hits) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    if (functionName === "(idle)") continue;
    const where = url.replace(/^file:\/\//, "").replace(/^.*node_modules\//, "");
    const name = `${functionName || "(anonymous)"} ${where ? `${where.split("/").slice(-2).join("/")}:${lineNumber + 1}` : ""}`.trim();
    fnSelf.set(name, (fnSelf.get(name) ?? 0) + count);
    const pkg = !url ? functionName : url.includes("node_modules/") ? url.split("node_modules/")[1]!.split("/").slice(0, url.includes("node_modules/@") ? 2 : 1).join("/") : url.startsWith("node:") ? "node:" + url.slice(5).split("/")[0] : "(project) " + where.split("/").slice(-2, -1)[0];
    pkgSelf.set(pkg, (pkgSelf.get(pkg) ?? 0) + count);
  }
  const pct = (n: number) => `${((100 * n) / total).toFixed(1).padStart(5)} %`;
  const list = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, top).map(([k, n]) => `  ${pct(n)}  ${k}`);
  console.log(`${file}: ${total} busy samples (${idle} idle)\nby package:\n${list(pkgSelf).join("\n")}\nby function (self):\n${list(fnSelf).join("\n")}\n`);
}
