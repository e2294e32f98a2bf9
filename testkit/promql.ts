/**
 * Just enough PromQL and Prometheus text format to check dashboards and alert rules against
 * real /metrics output: which series an expression selects, which labels it groups by, and which
 * samples a process exposes. Expressions are our own (deploy/monitoring); syntax itself is
 * promtool's job.
 */

export interface Matcher {
  label: string;
  op: "=" | "!=" | "=~" | "!~";
  value: string;
}

export interface Selector {
  metric: string;
  matchers: Matcher[];
}

export interface PromqlRefs {
  selectors: Selector[];
  /** Labels named in by / without / on / ignoring / group_left / group_right. */
  groupingLabels: string[];
}

const KEYWORDS = new Set(["by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset"]);
const GROUPING = /\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g;
const SELECTOR_WITH_MATCHERS = /([A-Za-z_:][A-Za-z0-9_:]*)\s*\{([^}]*)\}/g;
const MATCHER = /([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"/g;
const IDENTIFIER = /[A-Za-z_:][A-Za-z0-9_:]*/g;

export function promqlRefs(expr: string): PromqlRefs {
  const groupingLabels: string[] = [];
  const selectors: Selector[] = [];
  let rest = expr
    .replace(/\[[^\]]*\]/g, " ") // range and subquery durations
    .replace(GROUPING, (_, labels: string) => {
      groupingLabels.push(...labels.split(",").map((l) => l.trim()).filter(Boolean));
      return " ";
    })
    .replace(SELECTOR_WITH_MATCHERS, (_, metric: string, body: string) => {
      const matchers = [...body.matchAll(MATCHER)].map(([, label, op, value]) => ({ label: label!, op: op as Matcher["op"], value: JSON.parse(`"${value}"`) as string }));
      selectors.push({ metric, matchers });
      return " ";
    });
  // What is left: bare metric names, function names (followed by "("), keywords and numbers.
  rest = rest.replace(/"(?:[^"\\]|\\.)*"/g, " ");
  for (const match of rest.matchAll(IDENTIFIER)) {
    const name = match[0];
    const before = rest[match.index - 1];
    if (before !== undefined && /[0-9.]/.test(before)) continue; // the exponent or unit of a number
    if (KEYWORDS.has(name) || /^\s*\(/.test(rest.slice(match.index + name.length))) continue;
    selectors.push({ metric: name, matchers: [] });
  }
  return { selectors, groupingLabels };
}

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LABEL = /([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** The samples of a Prometheus text-format exposition (comments skipped). */
export function parseExposition(text: string): Sample[] {
  return text
    .split("\n")
    .filter((line) => line.trim() !== "" && !line.startsWith("#"))
    .map((line) => {
      const match = /^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
      if (!match) throw new Error(`not a sample line: ${line}`);
      const labels = Object.fromEntries([...(match[2] ?? "").matchAll(LABEL)].map(([, k, v]) => [k!, JSON.parse(`"${v}"`) as string]));
      return { name: match[1]!, labels, value: Number(match[3]) };
    });
}

/**
 * The value of the sample `name` with exactly the labels `labels` that the /metrics page at `url`
 * shows now; undefined when it has no such sample.
 */
export async function metricValue(url: string, name: string, labels: Record<string, string> = {}): Promise<number | undefined> {
  const samples = parseExposition(await (await fetch(url)).text());
  const wanted = Object.entries(labels);
  const sample = samples.find(
    (s) => s.name === name && Object.keys(s.labels).length === wanted.length && wanted.every(([k, v]) => s.labels[k] === v),
  );
  return sample?.value;
}

/** A histogram's cumulative bucket counts (`le` ascending, +Inf last) summed over every series of `name` in `samples`. */
export function histogramBuckets(samples: readonly Sample[], name: string): { le: number; count: number }[] {
  const byLe = new Map<number, number>();
  for (const s of samples) {
    if (s.name !== `${name}_bucket`) continue;
    const le = s.labels.le === "+Inf" ? Infinity : Number(s.labels.le);
    byLe.set(le, (byLe.get(le) ?? 0) + s.value);
  }
  return [...byLe].map(([le, count]) => ({ le, count })).sort((a, b) => a.le - b.le);
}

/** Prometheus semantics: an absent label has the value "", regular expressions are anchored. */
export function matches(sample: Sample, matcher: Matcher): boolean {
  const value = sample.labels[matcher.label] ?? "";
  switch (matcher.op) {
    case "=":
      return value === matcher.value;
    case "!=":
      return value !== matcher.value;
    case "=~":
      return new RegExp(`^(?:${matcher.value})$`).test(value);
    case "!~":
      return !new RegExp(`^(?:${matcher.value})$`).test(value);
  }
}
