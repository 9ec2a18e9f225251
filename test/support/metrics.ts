import { inject } from "vitest";

/** One scrape of a Prometheus text endpoint: `name{labels}` → value (all series of all metrics). */
export async function scrape(url = inject("metricsUrl")): Promise<Map<string, number>> {
  return parseScrape(await (await fetch(url)).text());
}

export function parseScrape(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

/** The scrapes of several processes as one: the values of a series present in more than one add up. */
export async function scrapeAll(urls: string[]): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const one of await Promise.all(urls.map((u) => scrape(u)))) {
    for (const [series, v] of one) out.set(series, (out.get(series) ?? 0) + v);
  }
  return out;
}

/** The sum of every series of `name` whose labels include all of `labels`. */
export function total(scraped: Map<string, number>, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const [series, value] of scraped) {
    if (series !== name && !series.startsWith(`${name}{`)) continue;
    if (Object.entries(labels).every(([k, v]) => series.includes(`${k}="${v}"`))) sum += value;
  }
  return sum;
}

/** The values of label `label` among the series of `name`. */
export function labelValues(scraped: Map<string, number>, name: string, label: string): Set<string> {
  const out = new Set<string>();
  const re = new RegExp(`[{,]${label}="([^"]*)"`);
  for (const series of scraped.keys()) {
    if (!series.startsWith(`${name}{`)) continue;
    const m = re.exec(series);
    if (m?.[1] !== undefined) out.add(m[1]);
  }
  return out;
}

/** Sample names of a scrape (`name` of `name{labels}`). */
export const sampleNames = (scraped: Map<string, number>) => new Set([...scraped.keys()].map((s) => s.split("{")[0] ?? s));

const PROMQL_WORDS = new Set(["by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset", "inf", "nan"]);

/**
 * The metric names a PromQL expression selects: strings, label matchers, ranges and grouping
 * clauses removed, what is left of the identifiers that are not functions or keywords.
 */
export function promqlMetricNames(expr: string): string[] {
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, " ")
    .replace(/\{[^}]*\}/g, " ")
    .replace(/\[[^\]]*\]/g, " ")
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ");
  const names = new Set<string>();
  for (const m of stripped.matchAll(/(?<![\w:.$])[A-Za-z_:][\w:]*(\s*\()?/g)) {
    const [word, call] = [m[0].replace(/\s*\($/, ""), m[1]];
    if (call || PROMQL_WORDS.has(word.toLowerCase()) || /^\d/.test(word)) continue;
    names.add(word);
  }
  return [...names];
}
