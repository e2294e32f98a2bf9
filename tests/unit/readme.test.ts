import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

// What a new user sees first: README.md up to its first sub-section. (That its printed output is
// what `npm start` prints is checked by tests/integration/start.test.ts.)
const ROOT = path.resolve(import.meta.dirname, "../..");
const readme = readFileSync(path.join(ROOT, "README.md"), "utf8");
const firstScreen = readme.slice(0, readme.indexOf("\n### "));

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
const anchors = new Set(
  [...readme.matchAll(/^#{1,6} (.+)$/gm)].map((m) =>
    m[1]!
      .toLowerCase()
      .replace(/[^\p{L}\p{N} _-]/gu, "")
      .replaceAll(" ", "-"),
  ),
);

describe("README's first screen", () => {
  it("fits a screen and gives the two commands, the curl line, the docs URL and where to read next", () => {
    expect(firstScreen.split("\n").length).toBeLessThanOrEqual(45);
    expect(firstScreen).toContain("npm install && npm start");
    expect(firstScreen).toMatch(/^npm test\b/m);
    expect(firstScreen).toMatch(/^ {2}curl -s -H "Authorization: Bearer [^"]+" http:\/\/localhost:8080\/v1\/pets$/m);
    expect(firstScreen).toContain("http://localhost:8080/docs");
    expect(firstScreen).toMatch(/Read next:/);
  });

  it("links only to sections and files that exist", () => {
    const links = [...firstScreen.matchAll(/\]\(([^)]+)\)/g)].map((m) => m[1]!);
    expect(links.length).toBeGreaterThanOrEqual(5);
    for (const link of links) {
      if (link.startsWith("#")) expect(anchors, link).toContain(link.slice(1));
      else expect(existsSync(path.join(ROOT, link.split("#")[0]!)), link).toBe(true);
    }
  });
});
