import { execFileSync } from "node:child_process";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = path.resolve(import.meta.dirname, "../../..");

/**
 * Whether String.prototype still has fast properties after importing `module`, asked of V8 in a
 * process of its own (natives syntax, so a clean realm each time). In dictionary mode every
 * `str.charCodeAt`, `str.slice`… goes through V8's generic property load: under callgrind the
 * gateway ran about 40,000 more instructions per request (docs/performance.md, Where the time goes).
 */
function stringPrototypeFastAfter(module: string): boolean {
  const script = `const fast = new Function("o", "return %HasFastProperties(o)");
await import(${JSON.stringify(pathToFileURL(path.join(ROOT, module)).href)});
process.stdout.write(String(fast(String.prototype)));`;
  const out = execFileSync(process.execPath, ["--allow-natives-syntax", "--input-type=module", "-e", script], { cwd: ROOT, encoding: "utf8" });
  return out === "true";
}

describe("String.prototype after ioredis is loaded", () => {
  it("ioredis alone leaves it in dictionary mode (its `class VerbatimString extends String`)", () => {
    expect(stringPrototypeFastAfter("node_modules/ioredis/built/index.js")).toBe(false);
  });

  it("the Redis client module, and so the whole gateway, gives it fast properties back", () => {
    expect(stringPrototypeFastAfter("lib/redis-client.ts")).toBe(true);
    expect(stringPrototypeFastAfter("gateway/gateway.ts")).toBe(true);
  });
});
