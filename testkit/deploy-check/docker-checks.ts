/** Checks of deploy/Dockerfile and its ignore file against the code; each returns the problems it finds. */
import { existsSync } from "node:fs";
import path from "node:path";
import { ROOT, read, gatewayFacts, petFacts, FACTS, type Check } from "./facts.ts";

// ---------------------------------------------------------------------------------------------
// Dockerfile
// ---------------------------------------------------------------------------------------------

interface Instruction {
  op: string;
  args: string;
  stage: number;
}

/** Instructions with line continuations joined and comments dropped. */
function parseDockerfile(text: string): Instruction[] {
  const out: Instruction[] = [];
  let stage = -1;
  const logical = text
    .split("\n")
    .filter((l) => !/^\s*#/.test(l))
    .join("\n")
    .replace(/\\\n/g, " ");
  for (const line of logical.split("\n")) {
    const m = /^\s*([A-Za-z]+)\s+(.*)$/.exec(line);
    if (!m) continue;
    const op = m[1]!.toUpperCase();
    if (op === "FROM") stage++;
    out.push({ op, args: m[2]!.trim(), stage });
  }
  return out;
}

/** Top-level directories of every relative import reachable from the entry files. */
function importedTopDirs(entries: string[]): Set<string> {
  const seen = new Set<string>();
  const queue = [...entries];
  while (queue.length) {
    const rel = queue.pop()!;
    if (seen.has(rel)) continue;
    seen.add(rel);
    const text = read(rel);
    for (const m of text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)["'](\.{1,2}\/[^"']+)["']/g)) {
      const target = path.posix.normalize(path.posix.join(path.posix.dirname(rel), m[1]!)).replace(/\.js$/, ".ts");
      if (target.endsWith(".ts") && existsSync(path.join(ROOT, target))) queue.push(target);
    }
  }
  return new Set([...seen].map((f) => f.split("/")[0]!));
}

export interface DockerInput {
  dockerfile: string;
  ignore: string;
}

export const dockerChecks: Record<string, Check<DockerInput>> = {
  "multi-stage: production deps installed in a build stage without a compiler, copied into a runtime stage": ({ dockerfile }) => {
    const ins = parseDockerfile(dockerfile);
    const problems: string[] = [];
    const froms = ins.filter((i) => i.op === "FROM");
    const last = froms.length - 1;
    if (froms.length < 2) problems.push(`${froms.length} FROM (want a multi-stage build)`);
    const ci = ins.find((i) => i.op === "RUN" && /\bnpm ci\b/.test(i.args));
    if (!ci || ci.stage === last || !/--omit=dev\b/.test(ci.args)) problems.push("npm ci --omit=dev must run in a build stage");
    // No dependency is a native addon to compile (SQLite is node:sqlite): a toolchain would only add build time.
    if (ins.some((i) => i.op === "RUN" && /apt-get install[^&]*\b(python3|make|g\+\+|gcc|build-essential)\b/.test(i.args))) {
      problems.push("no stage installs a compiler (python3, make, g++): no dependency is compiled");
    }
    const stageName = /\bAS\s+(\S+)/i.exec(froms[ci?.stage ?? 0]?.args ?? "")?.[1];
    if (!ins.some((i) => i.op === "COPY" && i.stage === last && i.args.includes(`--from=${stageName}`) && i.args.includes("node_modules"))) {
      problems.push("the runtime stage must copy node_modules from the deps stage");
    }
    if (ins.some((i) => i.stage === last && i.op === "RUN" && /\bnpm\b/.test(i.args))) problems.push("no npm in the runtime stage");
    return problems;
  },

  "runs as a non-root USER with a node-owned data directory": ({ dockerfile }) => {
    const ins = parseDockerfile(dockerfile);
    const last = Math.max(...ins.map((i) => i.stage));
    const problems: string[] = [];
    const users = ins.filter((i) => i.stage === last && i.op === "USER");
    const user = users.at(-1)?.args;
    if (!user || /^(root|0)(:|$)/.test(user)) problems.push(`final USER ${user} (want non-root)`);
    const afterUser = ins.slice(ins.indexOf(users.at(-1)!) + 1).map((i) => i.op);
    if (afterUser.some((op) => op === "RUN" || op === "USER")) problems.push("nothing may run or switch user after the final USER");
    if (!ins.some((i) => i.stage === last && i.op === "RUN" && /chown\s+node:node\s+\/app\/data\b/.test(i.args))) problems.push("/app/data must be owned by node");
    if (ins.find((i) => i.stage === last && i.op === "WORKDIR")?.args !== "/app") problems.push("WORKDIR /app");
    return problems;
  },

  "ports, entry points and sources agree with the code": ({ dockerfile }) => {
    const ins = parseDockerfile(dockerfile);
    const last = Math.max(...ins.map((i) => i.stage));
    const problems: string[] = [];
    const exposed = new Set(ins.filter((i) => i.op === "EXPOSE").flatMap((i) => i.args.split(/\s+/).map((p) => Number(p.split("/")[0]))));
    for (const f of Object.values(FACTS)) if (!exposed.has(f.defaultPort)) problems.push(`EXPOSE lacks ${f.portVar} ${f.defaultPort}`);
    const cmd = ins.filter((i) => i.op === "CMD").at(-1)?.args ?? "";
    const execForm = (text: string): unknown => {
      try {
        return JSON.parse(text);
      } catch {
        return text;
      }
    };
    if (JSON.stringify(execForm(cmd)) !== JSON.stringify(["node", gatewayFacts.entry])) {
      problems.push(`CMD ${cmd} (want exec form node ${gatewayFacts.entry})`);
    }
    const entrypoint = ins.filter((i) => i.op === "ENTRYPOINT").at(-1)?.args ?? "";
    if (!/tini/.test(entrypoint)) problems.push("ENTRYPOINT must be an init (tini) that forwards signals to node");
    const copied = new Set(
      ins
        .filter((i) => i.op === "COPY" && i.stage === last && !i.args.includes("--from="))
        .flatMap((i) => i.args.split(/\s+/).filter((a) => !a.startsWith("--")).slice(0, -1)),
    );
    for (const src of copied) if (!existsSync(path.join(ROOT, src))) problems.push(`COPY ${src}: no such path`);
    for (const dir of importedTopDirs([gatewayFacts.entry, petFacts.entry])) if (!copied.has(dir)) problems.push(`the entry points import ${dir}/, which is not copied`);
    for (const f of ["package.json", "deploy/grpc-health-check.mjs"]) if (!copied.has(f)) problems.push(`${f} is not copied`);
    return problems;
  },

  "Dockerfile.dockerignore is an allow list that admits every COPY source and keeps keys and local state out": ({ dockerfile, ignore }) => {
    const ins = parseDockerfile(dockerfile);
    const lines = ignore.split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("#"));
    const problems: string[] = [];
    if (lines[0] !== "*") problems.push("the ignore file must start with * (allow list)");
    const sources = ins
      .filter((i) => i.op === "COPY" && !i.args.includes("--from="))
      .flatMap((i) => i.args.split(/\s+/).filter((a) => !a.startsWith("--")).slice(0, -1));
    for (const src of sources) if (!lines.includes(`!${src}`)) problems.push(`COPY ${src} is not allowed by the ignore file`);
    for (const must of ["keys/private", "keys/public", "keys/issued.jsonl", "keys/revoked.json", "**/*.pem", "**/node_modules", "**/*.sqlite"]) {
      if (!lines.includes(must)) problems.push(`the ignore file must exclude ${must}`);
    }
    return problems;
  },
};
