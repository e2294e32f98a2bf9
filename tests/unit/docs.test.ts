import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import GithubSlugger from "github-slugger";
import { marked, type Token, type Tokens } from "marked";
import { describe, expect, it } from "vitest";
import { GATEWAY_ENV } from "../../gateway/config.ts";
import { keysEnvSchema } from "../../keys/config.ts";
import { KEY_SERVICE_ENV } from "../../keys/service-config.ts";
import { PET_SERVICE_ENV } from "../../pet-service/config.ts";

// What a reader follows in the documentation leads somewhere: README.md, docs/ and deploy/README.md
// link only to files and headings that exist, show only npm scripts package.json has, and each
// docs file's table of contents names its every section.
const ROOT = path.resolve(import.meta.dirname, "../..");
const DOCS = ["README.md", ...readdirSync(path.join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`), "deploy/README.md"];
const scripts = (JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts;

interface Doc {
  text: string;
  tokens: Token[];
  /** GitHub's anchors of its headings (a repeated heading gets -1, -2, … as GitHub gives it). */
  anchors: Set<string>;
  /** Every link target, as written. */
  links: string[];
}

const parsed = new Map<string, Doc>();
function doc(file: string): Doc {
  const known = parsed.get(file);
  if (known) return known;
  const text = readFileSync(path.join(ROOT, file), "utf8");
  const tokens = marked.lexer(text);
  const slugger = new GithubSlugger();
  const anchors = new Set<string>();
  const links: string[] = [];
  marked.walkTokens(tokens, (token) => {
    if (token.type === "heading") anchors.add(slugger.slug((token as Tokens.Heading).text));
    else if (token.type === "link") links.push((token as Tokens.Link).href);
  });
  const result = { text, tokens, anchors, links };
  parsed.set(file, result);
  return result;
}

const external = (href: string) => /^[a-z][a-z0-9+.-]*:/i.test(href);

describe.each(DOCS)("%s", (file) => {
  it("links only to files and headings that exist", () => {
    const relative = doc(file).links.filter((href) => !external(href));
    expect(relative.length).toBeGreaterThan(0);
    for (const href of relative) {
      const [target = "", anchor] = href.split("#");
      const resolved = target ? path.join(path.dirname(file), decodeURI(target)) : file;
      expect(existsSync(path.join(ROOT, resolved)), `${href}: no such file`).toBe(true);
      if (anchor !== undefined) {
        expect(resolved.endsWith(".md"), `${href}: an anchor into a file that is not markdown`).toBe(true);
        expect(doc(resolved).anchors, `${href}: no such heading in ${resolved}`).toContain(anchor);
      }
    }
  });

  it("shows only npm commands that exist", () => {
    const shown = [...doc(file).text.matchAll(/\bnpm run(?: -s| --silent)? ([a-z][\w:.-]*)/g)].map((m) => m[1]!);
    for (const name of shown) expect(Object.keys(scripts), `npm run ${name}`).toContain(name);
    for (const [, name] of doc(file).text.matchAll(/\bnpm (start|test)\b/g)) expect(Object.keys(scripts)).toContain(name);
  });
});

describe.each(DOCS.filter((f) => f.startsWith("docs/")))("%s", (file) => {
  it("opens with a table of contents that names every section", () => {
    const { tokens } = doc(file);
    const first = tokens.findIndex((t) => t.type === "heading" && (t as Tokens.Heading).depth === 2);
    expect(first, "no ## section").toBeGreaterThan(0);
    const contents: string[] = [];
    marked.walkTokens(tokens.slice(0, first), (t) => {
      if (t.type === "link") contents.push((t as Tokens.Link).href);
    });
    const slugger = new GithubSlugger();
    const sections: string[] = [];
    marked.walkTokens(tokens, (t) => {
      if (t.type !== "heading") return;
      const slug = slugger.slug((t as Tokens.Heading).text);
      if ((t as Tokens.Heading).depth === 2) sections.push(`#${slug}`);
    });
    expect(contents.filter((href) => href.startsWith("#"))).toEqual(sections);
  });
});

it("docs/operating.md's configuration table names every variable the processes read", () => {
  const { text } = doc("docs/operating.md");
  const table = text.slice(text.indexOf("## Configuration"), text.indexOf("\n## ", text.indexOf("## Configuration") + 1));
  const named = new Set([...table.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!));
  const read = [...Object.keys(GATEWAY_ENV.shape), ...Object.keys(PET_SERVICE_ENV.shape), ...Object.keys(keysEnvSchema.shape), ...Object.keys(KEY_SERVICE_ENV.shape), "LOG_LEVEL"];
  expect(read.filter((name) => !named.has(name))).toEqual([]);
});
